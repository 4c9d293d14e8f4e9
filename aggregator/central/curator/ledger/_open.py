"""The ledger a URL names (the forms of the aggregator's --db), and its default location."""

from __future__ import annotations

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._api import CustodianLedger
from deniable.aggregator.storage import POSTGRES_EXTRA, data_dir

__all__ = ["default_curator_url", "open_ledger"]


def default_curator_url() -> str:
    """``sqlite:///$XDG_DATA_HOME/deniable/curator.db`` (``~/.local/share`` when unset)."""
    return f"sqlite:///{data_dir() / 'curator.db'}"


def open_ledger(url: str, *, connections: int | None = None) -> CustodianLedger:
    """Open (creating its tables if missing) the ledger in the database a URL names.

    ``sqlite:///PATH`` (also ``sqlite:///:memory:``), or a libpq URL
    ``postgresql://USER@HOST:PORT/DBNAME`` (also ``postgres://``; needs the postgres extra).
    ``connections``: PostgreSQL's most pooled connections (the daemon's worker threads);
    SQLite has one connection.

    Raises:
        CuratorError: an unsupported URL, a database that cannot be opened or is not a
            ledger, or a missing postgres extra.
    """
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if not path:
            raise CuratorError(f"--db: {url!r} names no file; use sqlite:///PATH")
        from deniable.aggregator.central.curator.ledger._sqlite import SqliteLedger

        return SqliteLedger(path)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from deniable.aggregator.central.curator.ledger._postgres import PostgresLedger
        except ImportError:
            raise CuratorError(f"--db: {POSTGRES_EXTRA}") from None
        return (
            PostgresLedger(url)
            if connections is None
            else PostgresLedger(url, connections=connections)
        )
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise CuratorError(
        f"--db: unsupported database URL {url!r} (scheme {scheme!r}); "
        "use sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME"
    )
