"""A throwaway PostgreSQL server for the bench scripts, and the CPU its processes use."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._postgres import Cluster, server_bin_dir

__all__ = [
    "Cluster",
    "Used",
    "cpu_seconds",
    "create_database",
    "open_cluster",
    "peak_rss_mib",
    "server_cpu_seconds",
    "used",
]


def open_cluster(durable: bool) -> Cluster:
    """Start a throwaway cluster; ``durable`` turns fsync (off in the tests) back on.

    Durable is what a deployment runs and what SQLite's ``synchronous=FULL`` gives: every
    commit is flushed to disk before it is acknowledged.

    Raises:
        SystemExit: the PostgreSQL server binaries are not installed.
    """
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL server binaries not found: apt-get install postgresql")
    cluster = Cluster(bin_dir)
    cluster.start()
    if durable:
        cluster.stop_server("fast")
        options = cluster._options  # the tests' cluster has no durable switch
        cluster._options = options.replace("-c fsync=off -c full_page_writes=off", "")
        cluster.start_server()
    return cluster


def create_database(cluster: Cluster) -> str:
    """A new empty database on ``cluster``; its libpq URL."""
    name = f"b{uuid.uuid4().hex[:12]}"
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return cluster.url_of(name)


def peak_rss_mib(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a live process and the children it reaped have used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime..cstime


def server_cpu_seconds(cluster: Cluster) -> float:
    """CPU time the cluster's server processes have used so far, exited backends included.

    The postmaster reaps its backends, so its children's time counts those that exited;
    the live ones are added one by one.
    """
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    total = cpu_seconds(postmaster)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == postmaster:
                total += cpu_seconds(int(stat.parent.name))
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile: counted in the postmaster's children's time
    return total


@dataclass(frozen=True)
class Used:
    """What a stretch of the run used: write transactions, CPU seconds by process."""

    transactions: int
    server: float  # the PostgreSQL server's processes
    daemons: float  # the daemons' processes (0 for the bare client)
    client: float  # this process: the bare client, or the gRPC client threads

    @property
    def cpu(self) -> float:
        """CPU seconds of every process taking part."""
        return self.server + self.daemons + self.client

    def __sub__(self, other: Used) -> Used:
        return Used(
            self.transactions - other.transactions,
            self.server - other.server,
            self.daemons - other.daemons,
            self.client - other.client,
        )


def used(cluster: Cluster, url: str, pids: Sequence[int] = ()) -> Used:
    """What the cluster, the daemons ``pids`` and this process have used so far."""
    with psycopg.connect(url, autocommit=True) as db:  # the next transaction id to assign
        row = db.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
    assert row is not None
    return Used(
        int(row[0]),
        server_cpu_seconds(cluster),
        sum(cpu_seconds(pid) for pid in pids),
        time.process_time(),
    )
