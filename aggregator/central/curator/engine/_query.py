"""The aggregates as one SQL statement each, shared by the DuckDB and PostgreSQL engines."""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, Value
from deniable.aggregator.central.curator.engine._ast import (
    KINDS,
    BoolOp,
    Col,
    InList,
    IsNull,
    Lit,
    Node,
    quote_identifier,
    render_literal,
)
from deniable.aggregator.central.curator.engine._base import Engine, SumAggregate
from deniable.aggregator.central.curator.engine._sql import (
    Condition,
    Key,
    and_,
    literal_for,
)

__all__ = ["MAX_UNITS", "SqlEngine", "listed"]

MAX_UNITS = 2**53
"""|lo_units|, |hi_units| at most this: the clamp in binary64 is then exact."""
BATCH = 10_000
"""Rows fetched at a time when streaming a histogram over every key present."""


def listed(column: Col, values: Sequence[Value | bool], option: str) -> Condition:
    """``column`` is one of ``values`` (None: is NULL); an empty list matches nothing."""
    literals = [literal_for(column.kind, value, option) for value in values]
    present = tuple(dict.fromkeys(lit for lit in literals if lit.value is not None))
    node: Node | None = InList(column, present) if present else None
    if any(lit.value is None for lit in literals):
        node = IsNull(column) if node is None else BoolOp("OR", node, IsNull(column))
    shown = f"{column.name} IN {list(values)!r}"
    return Condition(Lit(False) if node is None else node, shown)


class SqlEngine(Engine):
    """An engine whose aggregates are SQL pushed down whole; subclasses run the statements.

    Subclasses set ``dialect``, ``source`` (a relation to select from) and ``columns``,
    and give the per-row random key and the statements' runners.
    """

    dialect: str
    source: str

    @abstractmethod
    def random_key(self, unit_sql: str) -> str:
        """A per-row key from the OS CSPRNG (64 bits or more), evaluated once per row."""

    @abstractmethod
    def present(self, column: str) -> str:
        """SQL true when the column's value is neither NULL nor NaN."""

    @abstractmethod
    def contribution(self, column: str, resolution: Fraction, lo: int, hi: int) -> str:
        """SQL of clamp(floor(value / resolution + 0.5), lo, hi) as a 64-bit integer."""

    @abstractmethod
    def fetch_one(self, sql: str) -> tuple[Any, ...]:
        """The one row ``sql`` returns."""

    @abstractmethod
    def fetch_stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        """The rows ``sql`` returns, fetched in batches of BATCH."""

    def _column(self, name: str, option: str, kinds: Sequence[str] = KINDS) -> Col:
        if name not in self.columns:
            names = ", ".join(repr(c) for c in list(self.columns)[:50])
            raise CuratorError(f"{option}: unknown column {name!r}; the columns are: {names}")
        kind = self.columns[name]
        if kind not in kinds:
            raise CuratorError(f"{option}: column {name!r} has type {kind}, not {kinds}")
        return Col(name, kind)

    def _where(self, *conditions: Condition | None) -> str:
        condition = and_(*conditions)
        return "" if condition is None else f" WHERE {condition.sql(self.dialect)}"

    def _rows(self, exprs: Sequence[str], where: str, unit: PrivacyUnit) -> str:
        """The kept rows: ``exprs`` as "__c0", "__c1", ... of at most K rows per unit."""
        aliases = [f'"__c{i}"' for i in range(len(exprs))]
        selected = ", ".join(f"{e} AS {a}" for e, a in zip(exprs, aliases, strict=True))
        if unit.column is None:
            return f"SELECT {selected} FROM {self.source}{where}"
        unit_sql = quote_identifier(self._column(unit.column, "--privacy-unit").name)
        names = ", ".join(aliases)
        # DuckDB refuses a volatile window ORDER BY: the key is drawn in an inner query.
        # row_number() numbers tied keys distinctly, so each unit keeps exactly
        # min(n, K) rows; a tie among n keys has probability <= n^2 / 2^65.
        keyed = (
            f'SELECT {selected}, {unit_sql} AS "__unit", {self.random_key(unit_sql)} AS '
            f'"__key" FROM {self.source}{where}'
        )
        ranked = (
            f'SELECT {names}, row_number() OVER (PARTITION BY "__unit" ORDER BY "__key") '
            f'AS "__rank" FROM ({keyed}) AS "__keyed"'
        )
        k = unit.max_contributions
        return f'SELECT {names} FROM ({ranked}) AS "__ranked" WHERE "__rank" <= {k}'

    def row_count(self) -> int:
        return int(self.fetch_one(f"SELECT count(*) FROM {self.source}")[0])

    def unit_count(self, unit: PrivacyUnit) -> int:
        if unit.column is None:
            return self.row_count()
        u = quote_identifier(self._column(unit.column, "--privacy-unit").name)
        sql = (
            f"SELECT count(DISTINCT {u}) + CASE WHEN count(*) > count({u}) THEN 1 ELSE 0 END "
            f"FROM {self.source}"
        )
        return int(self.fetch_one(sql)[0])

    def count(self, where: Condition | None, unit: PrivacyUnit) -> int:
        if unit.column is None:
            return int(self.fetch_one(f"SELECT count(*) FROM {self.source}{self._where(where)}")[0])
        u = quote_identifier(self._column(unit.column, "--privacy-unit").name)
        k = unit.max_contributions
        sql = (
            f'SELECT coalesce(sum(least("__n", {k})), 0) FROM (SELECT count(*) AS "__n" '
            f'FROM {self.source}{self._where(where)} GROUP BY {u}) AS "__units"'
        )
        return int(self.fetch_one(sql)[0])

    def histogram(
        self,
        key: Key,
        where: Condition | None,
        unit: PrivacyUnit,
        values: Sequence[Value | bool] | None = None,
    ) -> Iterator[tuple[Value | bool, int]]:
        column = self._column(key.column, "--column", ("int", "str", "bool"))
        keep = None if values is None else listed(column, values, "--values")
        rows = self._rows([quote_identifier(column.name)], self._where(where, keep), unit)
        sql = f'SELECT "__c0", count(*) FROM ({rows}) AS "__rows" GROUP BY "__c0"'
        if values is None:
            return ((row[0], int(row[1])) for row in self.fetch_stream(sql))
        counts = {row[0]: int(row[1]) for row in self.fetch_stream(sql)}
        return iter([(value, counts.get(value, 0)) for value in values])

    def sum(
        self,
        column: str,
        resolution: Fraction,
        lo_units: int,
        hi_units: int,
        where: Condition | None,
        unit: PrivacyUnit,
    ) -> SumAggregate:
        col = self._column(column, "--column", ("int", "float"))
        if not isinstance(resolution, Fraction | int) or resolution <= 0:
            raise CuratorError(f"--resolution must be a positive fraction, got {resolution!r}")
        for name, bound in (("lower", lo_units), ("upper", hi_units)):
            if isinstance(bound, bool) or not isinstance(bound, int) or abs(bound) > MAX_UNITS:
                raise CuratorError(f"the {name} clamp must be an integer within ±2^53 units")
        if lo_units > hi_units:
            raise CuratorError(f"the clamp is empty: {lo_units} > {hi_units} units")
        term = self.contribution(col.name, Fraction(resolution), lo_units, hi_units)
        rows = self._rows([term], self._where_raw(where, self.present(col.name)), unit)
        units, count = self.fetch_one(f'SELECT sum("__c0"), count(*) FROM ({rows}) AS "__rows"')
        return SumAggregate(int(units or 0), int(count))

    def _where_raw(self, where: Condition | None, extra_sql: str) -> str:
        base = self._where(where)
        return f" WHERE {extra_sql}" if not base else f"{base} AND {extra_sql}"

    def contingency(
        self,
        columns: Sequence[str],
        values: Sequence[Sequence[Value | bool]],
        where: Condition | None,
        unit: PrivacyUnit,
    ) -> dict[tuple[Value | bool, ...], int]:
        if not columns or len(columns) != len(values):
            raise CuratorError("--columns: give one list of values per column (and a column)")
        cols = [self._column(c, "--columns", ("int", "str", "bool")) for c in columns]
        keeps = [listed(c, v, "--values") for c, v in zip(cols, values, strict=True)]
        rows = self._rows(
            [quote_identifier(c.name) for c in cols], self._where(where, *keeps), unit
        )
        names = ", ".join(f'"__c{i}"' for i in range(len(cols)))
        sql = f'SELECT {names}, count(*) FROM ({rows}) AS "__rows" GROUP BY {names}'
        found = {tuple(row[:-1]): int(row[-1]) for row in self.fetch_stream(sql)}
        return {combo: found.get(combo, 0) for combo in itertools.product(*values)}

    def double(self, value: float | Fraction) -> str:
        """A binary64 literal of this dialect."""
        return render_literal(float(value), self.dialect)
