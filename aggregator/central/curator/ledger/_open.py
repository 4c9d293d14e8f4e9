"""The ledger a URL names (the forms of the aggregator's --db), and its default location."""

from __future__ import annotations

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._api import CustodianLedger
from deniable.aggregator.storage import POSTGRES_EXTRA, data_dir

__all__ = ["default_curator_url", "open_ledger"]


def default_curator_url() -> str:
    """``sqlite:///$XDG_DATA_HOME/deniable/curator.db`` (``~/.local/share`` when unset)."""
    return f"sqlite:///{data_dir() / 'curator.db'}"


def open_ledger(url: str) -> CustodianLedger:
    """Open (creating its tables if missing) the ledger in the database a URL names.

    ``sqlite:///PATH`` (also ``sqlite:///:memory:``), or a libpq URL
    ``postgresql://USER@HOST:PORT/DBNAME`` (also ``postgres://``; needs the postgres extra).

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
        return PostgresLedger(url)
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise CuratorError(
        f"--db: unsupported database URL {url!r} (scheme {scheme!r}); "
        "use sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME"
    )
