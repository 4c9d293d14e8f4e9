"""A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl on a temporary directory."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["ENABLE_HINT", "REQUIRE_ENV", "Cluster", "require_server", "server_bin_dir"]

ENABLE_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package "
    "postgresql (apt-get install postgresql) to run the PostgreSQL tests"
)
# Set by .ci/run: missing binaries then fail the tests instead of skipping them.
REQUIRE_ENV = "CI_REQUIRE_POSTGRES"

# Where Debian installs the server binaries (not on PATH): /usr/lib/postgresql/VERSION/bin.
_DEBIAN_ROOT = Path("/usr/lib/postgresql")
# initdb refuses to run as root; as root the cluster runs as the first of these that exists.
_UNPRIVILEGED = ("postgres", "nobody")


def server_bin_dir(path: str | None = None, debian_root: Path = _DEBIAN_ROOT) -> Path | None:
    """The directory holding initdb and pg_ctl: on PATH, else Debian's newest; None if none."""
    found = shutil.which("initdb", path=path)
    if found is not None and shutil.which("pg_ctl", path=path) is not None:
        return Path(found).resolve().parent
    versions = sorted(
        (
            d
            for d in debian_root.glob("*/bin")
            if (d / "initdb").exists() and d.parent.name.isdigit()
        ),
        key=lambda d: int(d.parent.name),
    )
    return versions[-1] if versions else None


def require_server(path: str | None = None, debian_root: Path = _DEBIAN_ROOT) -> Path:
    """The server binaries' directory; else skip (fail when ``CI_REQUIRE_POSTGRES=1``)."""
    bin_dir = server_bin_dir(path, debian_root)
    if bin_dir is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(ENABLE_HINT, pytrace=False)
        pytest.skip(ENABLE_HINT)
    return bin_dir


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A PostgreSQL server on 127.0.0.1 with trust authentication, deleted when stopped.

    As root (CI), ``initdb`` refuses to run, so the cluster's directory is handed to an
    unprivileged user (``postgres`` if the server package created it, else ``nobody``)
    and every server command runs as that user through ``runuser``.
    """

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="deniable-pg-"))
        self.data = self.root / "data"
        self._as: Sequence[str] = ()
        if os.geteuid() == 0:
            user = next(name for name in _UNPRIVILEGED if _user_exists(name))
            entry = pwd.getpwnam(user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._as = ("runuser", "-u", user, "--")
        self._started = False
        self._options = ""

    @property
    def url(self) -> str:
        """The libpq URL of the cluster's default database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_of(self, database: str) -> str:
        """The libpq URL of one database of the cluster."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, tool: str, *args: str) -> None:
        command = [*self._as, str(self.bin_dir / tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}{tail}")

    def start(self) -> None:
        """Create the cluster (superuser ``postgres``, trust auth), start it, wait for it."""
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        # No Unix socket: TCP on loopback only. fsync off: a throwaway cluster needs no
        # durability against power loss, and the tests run faster.
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
            "-c fsync=off -c full_page_writes=off -c max_connections=200"
        )
        self._options = options
        self._started = True
        self.start_server()

    def start_server(self) -> None:
        """Start the (created) server and wait until it accepts connections."""
        log = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", self._options, "-l", log, "-w", "start")

    def stop_server(self, mode: str = "immediate") -> None:
        """Stop the server but keep its data (``immediate``: as if it crashed)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def stop(self) -> None:
        """Stop the server (fast, no checkpoint needed) and delete its directory."""
        try:
            if self._started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
