"""Opening a data source: a CSV or Parquet file (DuckDB) or a PostgreSQL table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.engine._base import Engine
from deniable.aggregator.central.curator.engine._duckdb import FILE_KINDS, DuckDBEngine

__all__ = ["SOURCE_KINDS", "open_engine"]

SOURCE_KINDS = (*FILE_KINDS, "postgresql://")
"""What --data accepts: a file with one of these extensions, or a PostgreSQL URL."""
_URL_PREFIXES = ("postgresql://", "postgres://")


def open_engine(
    source: str,
    *,
    table: str | None = None,
    types: Mapping[str, str] | None = None,
    memory_limit: str | None = None,
    temp_directory: Path | None = None,
    threads: int | None = None,
) -> Engine:
    """The engine for ``source``: a file path (DuckDB) or a postgresql:// URL and ``table``.

    ``types`` (CSV only) declares columns' kinds; ``memory_limit`` (default 1GB),
    ``temp_directory`` (default a private temporary directory, removed on close) and
    ``threads`` configure DuckDB. A PostgreSQL source takes none of them.
    """
    text = str(source)
    if text.startswith(_URL_PREFIXES):
        given = [
            option
            for option, value in (
                ("--types", types),
                ("--memory-limit", memory_limit),
                ("--temp-directory", temp_directory),
                ("--threads", threads),
            )
            if value
        ]
        if given:
            raise CuratorError(f"{given[0]} applies to files read by DuckDB, not to PostgreSQL")
        from deniable.aggregator.central.curator.engine._postgres import PostgresEngine

        return PostgresEngine(text, table)
    if table is not None:
        raise CuratorError("--table applies to a PostgreSQL source (postgresql://...) only")
    return DuckDBEngine(
        Path(text),
        types=types,
        memory_limit=memory_limit,
        temp_directory=temp_directory,
        threads=threads,
    )
