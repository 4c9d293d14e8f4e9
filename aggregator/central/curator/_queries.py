"""Central counting queries on the curator's table: count and histogram, with noise."""

from __future__ import annotations

from collections.abc import Sequence

from deniable.aggregator.central.curator._noise import (
    NoisyCount,
    central_laplace_count,
)
from deniable.aggregator.central.curator._table import CuratorError, Table
from deniable.aggregator.central.curator._where import Condition, Value
from deniable.shared.sampling import ByteSource, os_source

__all__ = [
    "NEIGHBOURS",
    "check_neighbours",
    "count_sensitivity",
    "count_upper",
    "histogram_sensitivity",
    "matching",
    "noisy_count",
    "noisy_histogram",
    "parse_values",
]

NEIGHBOURS = ("add-remove", "replace")
"""add-remove: neighbours differ by one row added or removed; replace: by one row changed."""


def check_neighbours(neighbours: str) -> str:
    if neighbours not in NEIGHBOURS:
        raise CuratorError(f"--neighbours must be add-remove or replace, got {neighbours!r}")
    return neighbours


def count_sensitivity(neighbours: str) -> int:
    """1 either way: one row added, removed or changed moves a count by at most 1."""
    check_neighbours(neighbours)
    return 1


def histogram_sensitivity(neighbours: str) -> int:
    """L1 sensitivity: 1 under add/remove (one bin ±1), 2 under replace (one −1, one +1)."""
    return 1 if check_neighbours(neighbours) == "add-remove" else 2


def matching(table: Table, condition: Condition | None) -> list[dict[str, Value]]:
    """The rows the condition keeps (all without one)."""
    return [dict(row) for row in table.rows if condition is None or condition.evaluate(row)]


def count_upper(table: Table, neighbours: str, max_rows: int | None) -> int | None:
    """The public upper clamp: the row count under replace-one, else ``--max-rows`` if given."""
    return len(table.rows) if neighbours == "replace" else max_rows


def noisy_count(
    table: Table,
    condition: Condition | None,
    epsilon: float,
    neighbours: str,
    *,
    max_rows: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> NoisyCount:
    """The number of matching rows, with discrete Laplace noise of scale 1/ε."""
    sensitivity = count_sensitivity(neighbours)
    upper = count_upper(table, neighbours, max_rows)
    true = len(matching(table, condition))
    if upper is not None and true > upper:
        raise CuratorError(f"--max-rows {upper} is below the table's size")
    return central_laplace_count(
        true, epsilon, sensitivity, upper=upper, confidence=confidence, source=source
    )


def parse_values(table: Table, column: str, texts: Sequence[str], option: str) -> list[Value]:
    """The listed category values of ``column``, as its type; a value that is not is an error."""
    kind = table.column(column, option)
    values: list[Value] = []
    for text in texts:
        try:
            value: Value = text if kind == "str" else (int(text) if kind == "int" else float(text))
        except ValueError:
            raise CuratorError(
                f"{option}: column {column!r} is {kind} but {text!r} is not"
            ) from None
        if value in values:
            raise CuratorError(f"{option}: value {text!r} of {column!r} is listed twice")
        values.append(value)
    if not values:
        raise CuratorError(f"{option}: list the values of {column!r} (a public list of categories)")
    return values


def noisy_histogram(
    table: Table,
    column: str,
    values: Sequence[Value],
    condition: Condition | None,
    epsilon: float,
    neighbours: str,
    *,
    max_rows: int | None = None,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> list[tuple[Value, NoisyCount]]:
    """The count of each listed value among matching rows, each with noise of scale Δ/ε.

    The whole histogram is ε-DP (L1 sensitivity Δ = 1 or 2); rows with an unlisted value
    are counted in no bin. The list of values must be public: taken from the data, it
    would reveal that someone has a rare value.
    """
    sensitivity = histogram_sensitivity(neighbours)
    upper = count_upper(table, neighbours, max_rows)
    rows = matching(table, condition)
    return [
        (
            value,
            central_laplace_count(
                sum(1 for row in rows if row[column] == value),
                epsilon,
                sensitivity,
                upper=upper,
                confidence=confidence,
                source=source,
            ),
        )
        for value in values
    ]
