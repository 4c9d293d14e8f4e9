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
    def collect(self, expr: str) -> str:
        """The aggregate gathering ``expr`` of a unit's rows into a list (NULLs kept)."""

    @abstractmethod
    def choose(self, rows: str, n: str, k: int) -> str:
        """``k`` elements of the list ``rows`` (of length ``n`` > ``k``), chosen at random.

        The subset is uniformly random, drawn with the OS CSPRNG; the SQL is evaluated
        only for units with more than K rows.
        """

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

    def _rows(self, expr: str, where: str, unit: PrivacyUnit) -> str:
        """The kept rows' ``expr`` as "__c0": at most K rows per unit, chosen at random.

        Each unit's matching rows are gathered into a list in one aggregation (NULL ids
        group together: one unit). A unit with n <= K rows keeps its list whole and draws
        no randomness; only the lists of units with n > K go through ``choose``.
        """
        if unit.column is None:
            return f'SELECT {expr} AS "__c0" FROM {self.source}{where}'
        unit_sql = quote_identifier(self._column(unit.column, "--privacy-unit").name)
        k = unit.max_contributions
        units = (
            f'SELECT count(*) AS "__n", {self.collect(expr)} AS "__l" '
            f"FROM {self.source}{where} GROUP BY {unit_sql}"
        )
        chosen = self.choose('"__l"', '"__n"', k)
        kept = f'CASE WHEN "__n" > {k} THEN {chosen} ELSE "__l" END'
        return f'SELECT unnest({kept}) AS "__c0" FROM ({units}) AS "__units"'

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
        if values is None:
            rows = self._rows(quote_identifier(column.name), self._where(where), unit)
            sql = f'SELECT "__c0", count(*) FROM ({rows}) AS "__rows" GROUP BY "__c0"'
            return ((row[0], int(row[1])) for row in self.fetch_stream(sql))
        counts = self._listed_counts([column], [values], where, unit)
        return iter([(value, counts.get((value,), 0)) for value in values])

    def _listed_counts(
        self,
        cols: Sequence[Col],
        values: Sequence[Sequence[Value | bool]],
        where: Condition | None,
        unit: PrivacyUnit,
    ) -> dict[tuple[Value | bool, ...], int]:
        """The bounded count of each combination of listed values present.

        The filter is ``where`` and every column's value listed. Rows are coded as one
        integer (a mixed-radix number of the values' positions), so the bounding gathers
        small integers, not strings; the codes are decoded here.
        """
        keeps = [listed(c, v, "--values") for c, v in zip(cols, values, strict=True)]
        decode: dict[int, tuple[Value | bool, ...]] = {0: ()}
        terms = []
        stride = 1
        for col, given in zip(cols, values, strict=True):
            distinct = list(
                dict.fromkeys(literal_for(col.kind, v, "--values").value for v in given)
            )
            quoted = quote_identifier(col.name)
            whens = "".join(
                f" WHEN {quoted} IS NULL THEN {i}"
                if value is None
                else f" WHEN {quoted} = {render_literal(value, self.dialect)} THEN {i}"
                for i, value in enumerate(distinct)
            )
            terms.append(f"CASE{whens} END * {stride}" if whens else "0")
            decode = {
                code + i * stride: (*combo, value)
                for code, combo in decode.items()
                for i, value in enumerate(distinct)
            }
            stride *= max(len(distinct), 1)
            if stride > MAX_UNITS:
                raise CuratorError("--values: too many combinations of listed values")
        code = " + ".join(terms)
        rows = self._rows(f"CAST({code} AS BIGINT)", self._where(where, *keeps), unit)
        sql = f'SELECT "__c0", count(*) FROM ({rows}) AS "__rows" GROUP BY "__c0"'
        return {decode[int(row[0])]: int(row[1]) for row in self.fetch_stream(sql)}

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
        rows = self._rows(term, self._where_raw(where, self.present(col.name)), unit)
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
        found = self._listed_counts(cols, values, where, unit)
        return {combo: found.get(combo, 0) for combo in itertools.product(*values)}

    def double(self, value: float | Fraction) -> str:
        """A binary64 literal of this dialect."""
        return render_literal(float(value), self.dialect)
