"""Shared test helpers: running the installed console scripts in subprocesses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._postgres import Cluster, require_server
from tests.e2e._forks import Runner

BIN = Path(sys.executable).parent

RunCli = Callable[..., subprocess.CompletedProcess[str]]

# No wall-clock limit on an example (nor on drawing one): on a loaded machine hypothesis's
# default deadline (200 ms) and its too-slow check fail tests whose code is correct.
settings.register_profile("deniable", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("deniable")


# The longest single tests (each a few times a typical file's total), by name. They run
# first: pytest-xdist's worksteal hands each worker a contiguous half of the collection and
# an idle worker steals from the end of the other's queue, so a long test left at the end
# of a queue keeps one core busy while the other waits. First, they overlap everything else.
LONG_TESTS_FIRST = frozenset(
    {
        "test_every_readme_command_runs_with_the_exit_code_and_output_shown",
        "test_each_configuration_is_measured_and_its_counts_checked",
        "test_threads_of_mixed_calls_against_a_daemon_of_its_own_lose_nothing",
        "TestIdIndexModel",
        "test_simulate_sweep_json_text_and_figures_agree",
        "test_acknowledged_reports_survive_kill_9_exactly_once",
        "test_fast_path_agrees_with_exact_path_on_mixed_batches",
        # The browser's: 10^6 reports drawn in Chromium; byte-for-byte replays.
        "test_reports_follow_the_python_mechanisms_law",
        "test_replay_matches_the_python_client_byte_for_byte",
        # The curator's daemons: a real `curate serve` each, and a dozen CLI calls.
        "test_an_analyst_runs_every_query_kind_until_the_budget_refuses",
        "test_a_postgresql_table_is_queried_in_place_until_the_budget_refuses",
        "test_the_budget_survives_a_restart_and_a_changed_file",
        "test_the_worked_examples_print_what_the_page_shows",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests of :data:`LONG_TESTS_FIRST` to the front, the rest in their order."""

    def long(item: pytest.Item) -> bool:
        return bool({item.name, getattr(item, "originalname", None)} & LONG_TESTS_FIRST) or (
            item.parent is not None and item.parent.name in LONG_TESTS_FIRST
        )

    items[:] = [item for item in items if long(item)] + [item for item in items if not long(item)]


@pytest.fixture(autouse=True)
def participant_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh XDG data and config directory per test, inherited by every subprocess.

    The participant's ledger, memo and config file live there, never in the real home; a
    test that plays several participants gives each its own ``XDG_DATA_HOME``.
    """
    home = tmp_path_factory.mktemp("participant")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    return home


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL server per test worker; skipped when it is not installed.

    With ``CI_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) missing binaries fail instead.
    """
    cluster = Cluster(require_server())
    try:
        cluster.start()
        yield cluster
    finally:
        _stop_and_delete_later(cluster)


def _stop_and_delete_later(cluster: Cluster) -> None:
    """Stop the server now; delete its directory in a process of its own, not waited for.

    By the end of a worker's run the cluster holds a database per test that asked for one
    (a few hundred MB in thousands of files): deleting them took the worker 2-10 s at its
    very end, while the other worker may already be idle. ``rm`` finishes on its own.
    """
    try:
        if cluster._started:
            cluster.stop_server("immediate")
    finally:
        # sh puts rm in the background and exits: rm is nobody's child to wait for.
        background = 'rm -rf -- "$1" </dev/null >/dev/null 2>&1 &'
        subprocess.run(["sh", "-c", background, "sh", str(cluster.root)], check=False)


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """The libpq URL of a new, empty database on the throwaway server (one per test)."""
    import psycopg

    name = f"t{uuid.uuid4().hex}"
    with psycopg.connect(postgres_cluster.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return postgres_cluster.url_of(name)


@pytest.fixture(scope="session")
def cli_runner() -> Iterator[Runner]:
    """One process per test worker with both tools imported, forked for each invocation."""
    runner = Runner()
    yield runner
    runner.close()


@pytest.fixture
def run_cli(cli_runner: Runner) -> RunCli:
    """Run a console script (``deniable`` or ``deniable-aggregator``) as a process.

    Each invocation is a forked child of :func:`cli_runner` that runs the script's entry
    point with its own arguments, environment (the test's, without ``DENIABLE_*`` unless
    given), stdin, exit code, stdout and stderr: what the installed script does, without
    paying ~0.3-1 s of interpreter start and imports per command. The real executables
    are run by ``tests/test_startup.py``, ``tests/test_packaging.py`` and
    :func:`run_script`.
    """

    def run(
        script: str,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        assert (BIN / script).exists(), f"console script {script} is not installed in {BIN}"
        assert cli_runner.alive, "the CLI runner process has died"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        environment.update(env or {})
        return cli_runner.complete(script, list(args), environment, input)

    return run


@pytest.fixture
def run_script() -> RunCli:
    """Run an installed console script as its own process (interpreter start included)."""

    def run(
        script: str,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        executable = BIN / script
        assert executable.exists(), f"console script {script} is not installed in {BIN}"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        environment.update(env or {})
        return subprocess.run(
            [str(executable), *args],
            input=input,
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout,
            check=False,
        )

    return run


# --- gRPC: a real in-process server on 127.0.0.1:0, and a real daemon subprocess ---------

ADMIN_TOKEN = "test-admin-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    """A real aggregator on 127.0.0.1 with an OS-chosen port and a fresh SQLite file."""
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'aggregator.db'}"), ADMIN_TOKEN, "127.0.0.1:0"
    )
    yield running
    running.stop(grace=1.0)


@pytest.fixture
def admin(server: RunningServer) -> Iterator[AggregatorClient]:
    """A client that sends the admin token."""
    with AggregatorClient(server.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
        yield client


@pytest.fixture
def anonymous(server: RunningServer) -> Iterator[AggregatorClient]:
    """A client without a token (a participant)."""
    with AggregatorClient(server.address, attempts=1) as client:
        yield client


def binary_question(qid: str = "cheated", alpha: float = 0.5) -> pb.Question:
    """A yes/no question with randomized response at ``alpha``."""
    return pb.Question(
        id=qid,
        text=f"Question {qid}?",
        binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha)),
    )


@dataclass
class Daemon:
    """A ``deniable-aggregator serve`` subprocess."""

    process: subprocess.Popen[str]
    address: str
    token_file: Path
    db_url: str
    env: dict[str, str]
    stderr_path: Path
    web_address: str | None = None  # ``serve --web``'s bound HOST:PORT, when given

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit code."""
        return stop_process(self.process)


def stop_process(process: subprocess.Popen[str]) -> int:
    """SIGTERM a daemon and wait for it (killed after 20 s); its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def start_daemon(
    tmp_path: Path,
    db_url: str | None = None,
    args: Sequence[str] = (),
    *,
    peer_limit: bool = False,
    env: dict[str, str] | None = None,
) -> Daemon:
    """Start ``deniable-aggregator serve`` on 127.0.0.1:0 and wait for its 'listening' log.

    ``args`` are more ``serve`` options, such as ``--tls-cert FILE`` (with ``--web
    127.0.0.1:0``, :attr:`Daemon.web_address` is the web port's). The tests send
    every report from this one machine, so the per-peer report limit is off
    (``DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND=0``) unless ``peer_limit``.
    ``env``: more variables for the daemon (the test's own ``DENIABLE_*`` ones are not
    passed on).
    """
    extra = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    if not peer_limit:
        env["DENIABLE_AGGREGATOR_SERVE_PEER_REPORTS_PER_SECOND"] = "0"
    env.update(extra)
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    token_file = tmp_path / "admin-token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    db_url = db_url or f"sqlite:///{tmp_path / 'daemon.db'}"
    stderr_path = tmp_path / f"daemon-{time.monotonic_ns()}.log"
    with stderr_path.open("w") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--listen", "127.0.0.1:0",
             "--db", db_url, "--admin-token-file", str(token_file), "--grace", "5", *args],
            stdout=subprocess.DEVNULL, stderr=log, text=True, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in stderr_path.read_text().splitlines():
            record = json.loads(line)
            if record.get("event") == "listening":
                web = f"127.0.0.1:{record['web_port']}" if "web_port" in record else None
                return Daemon(
                    process, f"127.0.0.1:{record['port']}", token_file, db_url, env, stderr_path,
                    web,
                )  # fmt: skip
        if process.poll() is not None:
            raise RuntimeError(f"daemon exited early: {stderr_path.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("daemon did not start listening within 30 s")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A real daemon subprocess, stopped with SIGTERM at the end of the test."""
    running = start_daemon(tmp_path)
    yield running
    running.stop()


@pytest.fixture
def own_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """:func:`daemon` under a name a module's ``daemon`` (:func:`shared_daemon`) leaves free."""
    running = start_daemon(tmp_path)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def worker_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One real daemon subprocess per test worker, for :func:`shared_daemon`."""
    running = start_daemon(tmp_path_factory.mktemp("worker-daemon"))
    yield running
    running.stop()


@pytest.fixture
def shared_daemon(worker_daemon: Daemon) -> Daemon:
    """The worker's daemon, for a test that only creates surveys of its own and talks to it.

    Starting a daemon costs an interpreter and its imports (about a second); a test that
    neither stops it, nor reads its database or log, nor counts every survey it holds
    shares this one instead (the daemon assigns every survey a fresh id, and each test has
    its own participant home). A module whose daemon tests all qualify overrides its
    ``daemon`` fixture with this one.
    """
    assert worker_daemon.process.poll() is None, (
        f"the worker's shared daemon has exited: {worker_daemon.stderr_path.read_text()[-2000:]}"
    )
    return worker_daemon


def has_ipv6_loopback() -> bool:
    """Whether this machine can bind ``::1`` (tests of IPv6 listening skip without it)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True
