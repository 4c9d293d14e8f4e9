"""A throwaway PostgreSQL server for the bench scripts, and daemons of the installed script."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._postgres import Cluster, server_bin_dir

__all__ = ["Cluster", "create_database", "open_cluster", "peak_rss_mib"]


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
