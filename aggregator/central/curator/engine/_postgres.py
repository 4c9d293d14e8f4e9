"""A PostgreSQL table or view, each aggregate pushed down as one read-only statement."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.engine._ast import quote_identifier
from deniable.aggregator.central.curator.engine._query import BATCH, SqlEngine

__all__ = ["PostgresEngine", "parse_table"]

_IDENT = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'
_TABLE = re.compile(rf"({_IDENT})(?:\.({_IDENT}))?")
# pg_type.typname -> (kind, cast or None); text casts use the session's ISO DateStyle, UTC.
_TYPES: dict[str, tuple[str, str | None]] = {
    "int2": ("int", None),
    "int4": ("int", None),
    "int8": ("int", None),
    "float4": ("float", None),
    "float8": ("float", None),
    "numeric": ("float", None),
    "text": ("str", None),
    "varchar": ("str", None),
    "bpchar": ("str", "text"),
    "name": ("str", "text"),
    "bool": ("bool", None),
    "date": ("str", "text"),
    "time": ("str", "text"),
    "timestamp": ("str", "text"),
    "timestamptz": ("str", "text"),
    "uuid": ("str", "text"),
}
_SESSION = (
    "SET statement_timeout = 0",
    "SET DateStyle = 'ISO, YMD'",
    "SET TimeZone = 'UTC'",
    "SET standard_conforming_strings = on",
)
_EXACT_SUMS = frozenset({"numeric"})
"""PostgreSQL types whose sums stay in exact decimal (not cast to double precision)."""


def _identifier(text: str) -> str:
    """An identifier as PostgreSQL reads it: quoted kept exactly, unquoted lower-cased."""
    if text.startswith('"'):
        return text[1:-1].replace('""', '"')
    return text.lower()


def parse_table(text: str | None) -> tuple[str | None, str]:
    """``[schema.]table`` (each part quoted or not) as (schema or None, table)."""
    match = _TABLE.fullmatch((text or "").strip())
    if not text or match is None:
        raise CuratorError(f"--table: expected a table or view name, [schema.]name, got {text!r}")
    first, second = match.group(1), match.group(2)
    if second is None:
        return None, _identifier(first)
    return _identifier(first), _identifier(second)


class PostgresEngine(SqlEngine):
    """A table or view of a PostgreSQL database; the aggregates run in PostgreSQL.

    Every statement runs in a READ ONLY transaction on a pooled connection whose session
    has no statement timeout; the key histogram streams through a server-side cursor.
    The random choice of a unit's rows orders them by gen_random_uuid() (pg_strong_random).
    """

    dialect = "postgres"

    def __init__(self, url: str, table: str | None) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
        from psycopg_pool import ConnectionPool

        schema, name = parse_table(table)
        qualified = ".".join(quote_identifier(p) for p in (schema, name) if p is not None)
        try:
            info = conninfo_to_dict(url)
        except psycopg.Error as error:
            raise CuratorError(f"--data: not a PostgreSQL URL: {error}") from None
        where = f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname')}"
        self.description = f"postgresql://{where} table {qualified}"
        self._psycopg = psycopg

        def configure(conn: Any) -> None:
            for statement in _SESSION:
                conn.execute(statement)
            conn.commit()
            conn.read_only = True

        try:
            self._pool = ConnectionPool(
                url, min_size=1, max_size=4, configure=configure, open=True, timeout=30
            )
            self._pool.wait(timeout=30)
        except Exception as error:
            raise CuratorError(f"--data: cannot connect to {self.description}: {error}") from None
        try:
            self._describe(qualified)
        except BaseException:
            self.close()
            raise

    def _describe(self, qualified: str) -> None:
        sql = (
            "SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod) "
            "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY a.attnum"
        )
        with self._pool.connection() as conn:
            found = conn.execute("SELECT to_regclass(%s)", (qualified,)).fetchone()
            if found is None or found[0] is None:
                raise CuratorError(f"--table: no table or view {qualified} in {self.description}")
            described = conn.execute(sql, (qualified,)).fetchall()
        columns: dict[str, str] = {}
        self._numeric: set[str] = set()
        selected = []
        for name, typname, shown in described:
            kind, cast = _TYPES.get(typname, (str(shown), None))
            columns[name] = kind
            if typname in _EXACT_SUMS:
                self._numeric.add(name)
            quoted = quote_identifier(name)
            selected.append(f"CAST({quoted} AS {cast}) AS {quoted}" if cast else quoted)
        self.columns = columns
        self.source = f'(SELECT {", ".join(selected)} FROM {qualified}) AS "__source"'

    def collect(self, expr: str) -> str:
        return f"array_agg({expr})"

    def choose(self, rows: str, n: str, k: int) -> str:
        # A CASE evaluates this subquery only for units with n > K: only their rows get a key.
        return (
            f'ARRAY(SELECT {rows}["__i"] FROM generate_series(1, {n}) AS "__i" '
            f"ORDER BY gen_random_uuid() LIMIT {k})"
        )

    def present(self, column: str) -> str:
        quoted = quote_identifier(column)
        if column in self._numeric:
            return f"({quoted} IS NOT NULL AND {quoted} <> 'NaN'::numeric)"
        if self.columns[column] == "float":
            return f"({quoted} IS NOT NULL AND {quoted} <> 'NaN'::float8)"
        return f"({quoted} IS NOT NULL)"

    def contribution(self, column: str, resolution: Fraction, lo: int, hi: int) -> str:
        quoted = quote_identifier(column)
        if column in self._numeric:
            den, num = resolution.denominator, resolution.numerator
            scaled = f"floor({quoted} * {den}::numeric / {num}::numeric + 0.5)"
        else:
            scaled = f"floor(CAST({quoted} AS DOUBLE PRECISION) / {self.double(resolution)} + 0.5)"
        return f"CAST(least(greatest({scaled}, {lo}), {hi}) AS BIGINT)"

    def fetch_one(self, sql: str) -> tuple[Any, ...]:
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute(sql).fetchone()
        assert row is not None
        return tuple(row)

    def fetch_stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        with self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(name=f"deniable_{uuid.uuid4().hex}")
            cursor.itersize = BATCH
            cursor.execute(sql)
            for row in cursor:
                yield tuple(row)
            cursor.close()

    def close(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
