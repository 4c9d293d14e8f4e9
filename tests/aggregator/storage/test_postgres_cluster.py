"""The throwaway PostgreSQL server the tests use, and how its absence is reported."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest

from tests._postgres import ENABLE_HINT, REQUIRE_ENV, Cluster, require_server, server_bin_dir


def test_the_cluster_serves_an_empty_database_on_loopback_with_trust(
    postgres_cluster: Cluster, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url) as db:  # no password: trust on loopback
        address, port, user = db.execute(
            "SELECT host(inet_server_addr()), inet_server_port(), current_user"
        ).fetchone() or (None, None, None)
        tables = db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert (address, port, user) == ("127.0.0.1", postgres_cluster.port, "postgres")
    assert tables == (0,)


def test_each_test_gets_its_own_database(postgres_cluster: Cluster, postgres_url: str) -> None:
    with psycopg.connect(postgres_cluster.url) as admin:
        names = [row[0] for row in admin.execute("SELECT datname FROM pg_database")]
    assert postgres_url.rsplit("/", 1)[1] in names


def test_a_stopped_server_restarts_with_its_data_and_stop_deletes_it(
    postgres_cluster: Cluster,
) -> None:
    other = Cluster(postgres_cluster.bin_dir)
    other.start()
    with psycopg.connect(other.url, autocommit=True) as db:
        db.execute("CREATE TABLE kept (x INTEGER)")
    other.stop_server()  # a crash: the server goes, its data stays
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(other.url, connect_timeout=5).close()
    other.start_server()
    with psycopg.connect(other.url) as db:
        assert db.execute("SELECT count(*) FROM kept").fetchone() == (0,)
    other.stop()
    assert not other.root.exists()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", other.port), timeout=5).close()


def _fake_install(root: Path, *versions: str) -> None:
    for version in versions:
        bin_dir = root / version / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "initdb").write_text("")


def test_debian_binaries_are_found_off_path_newest_first(tmp_path: Path) -> None:
    _fake_install(tmp_path, "9", "15", "13")
    assert server_bin_dir(path="", debian_root=tmp_path) == tmp_path / "15" / "bin"
    assert server_bin_dir(path="", debian_root=tmp_path / "none") is None


def test_missing_binaries_skip_with_how_to_enable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_server(path="", debian_root=tmp_path)
    assert str(skipped.value) == ENABLE_HINT
    assert "\n" not in ENABLE_HINT
    assert "install the Debian package postgresql" in ENABLE_HINT


def test_ci_fails_instead_of_skipping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="install the Debian package postgresql"):
        require_server(path="", debian_root=tmp_path)
