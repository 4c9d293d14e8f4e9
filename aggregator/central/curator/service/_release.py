"""Releases: one noisy contingency table, charged once; counts from it cost nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from deniable.aggregator.central.curator._base import CuratorError, Value
from deniable.aggregator.central.curator._mean import mean_interval
from deniable.aggregator.central.curator._queries import parse_values
from deniable.aggregator.central.curator._release import (
    Release,
    make_release,
    release_from_document,
)
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._kinds import QueryOptions
from deniable.aggregator.central.curator.service._results import Charge
from deniable.shared.sampling import ByteSource
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["ReleaseQuery", "answer_from_release", "release_constraints", "release_from_wire"]


@dataclass(frozen=True)
class ReleaseQuery:
    """A contingency table over listed values of some columns (rows matching ``where``)."""

    options: QueryOptions
    columns: tuple[tuple[str, tuple[str, ...]], ...]
    max_rows: int | None = None

    def check(self, dataset: Dataset) -> dict[str, list[Value]]:
        """Each column's listed values as its type; errors name the column or value."""
        if not self.columns:
            raise CuratorError("--columns: name at least one column")
        names = [name for name, _ in self.columns]
        if len(set(names)) != len(names):
            raise CuratorError("--columns: a column is named twice")
        dataset.condition(self.options.where)
        return {
            name: parse_values(dataset.column(name, "--columns"), name, texts, "--values")
            for name, texts in self.columns
        }

    def charge(self) -> Charge:
        """ε once for the whole table."""
        return Charge(self.options.exact_epsilon)

    def describe(self) -> str:
        """``release of dept × band`` for the ledger."""
        return f"release of {' × '.join(n for n, _ in self.columns)}{self.options.describe()}"

    def run(self, dataset: Dataset, source: ByteSource) -> dict[str, Any]:
        """Count every combination (K rows per unit), add the noise; the release document."""
        domains = self.check(dataset)
        names = [name for name, _ in self.columns]
        cells = dataset.engine.contingency(
            names,
            [domains[name] for name in names],
            dataset.condition(self.options.where),
            dataset.unit,
        )
        release = make_release(
            cells,
            [(name, dataset.column(name, "--columns"), domains[name]) for name in names],
            self.options.exact_epsilon,
            dataset.neighbours,
            dataset.unit,
            upper=dataset.count_upper(self.max_rows),
            source=source,
        )
        return {**release.to_dict(), "dataset": dataset.name, "where": self.options.where}


def release_from_wire(request: pb.ReleaseRequest) -> ReleaseQuery:
    """The release a request describes."""
    return ReleaseQuery(
        QueryOptions.from_wire(request.options),
        tuple((column.column, tuple(column.values)) for column in request.columns),
        request.max_rows if request.HasField("max_rows") else None,
    )


def _literal(node: exp.Expression, where: str) -> Value:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _literal(node.this, where)
        assert isinstance(value, int | float)
        return -value
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        return int(text) if text.lstrip("-").isdigit() else float(text)
    raise CuratorError(
        f"--where (on a release): {node.sql()!r} is not a literal; a release answers "
        "conditions of the form column = value, column IN (values), joined by AND"
    )


def release_constraints(where: str | None, columns: Sequence[str]) -> dict[str, list[Value]]:
    """``col = v``, ``col IN (…)`` joined by AND, as {column: allowed values}."""
    if not where:
        return {}
    try:
        tree = sqlglot.parse_one(where, read="duckdb")
    except sqlglot.errors.ParseError as error:
        raise CuratorError(f"--where: does not parse ({error.errors[0]['description']})") from None
    constraints: dict[str, list[Value]] = {}
    terms = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    for term in terms:
        while isinstance(term, exp.Paren):
            term = term.this
        if isinstance(term, exp.EQ) and isinstance(term.this, exp.Column):
            column, values = term.this.name, [_literal(term.expression, where)]
        elif (
            isinstance(term, exp.In)
            and isinstance(term.this, exp.Column)
            and not term.args.get("query")
        ):
            column, values = term.this.name, [_literal(v, where) for v in term.expressions]
        else:
            raise CuratorError(
                f"--where (on a release): {term.sql()!r} is not column = value or column "
                "IN (values); a release answers only those, joined by AND"
            )
        if column not in columns:
            raise CuratorError(
                f"--where: column {column!r} is not in the release (its columns: "
                f"{', '.join(columns)})"
            )
        previous = constraints.get(column)
        constraints[column] = values if previous is None else [v for v in previous if v in values]
    return constraints


def _numeric_from_release(
    release: Release,
    kind: str,
    column: str,
    constraints: Mapping[str, Sequence[Value]],
    confidence: float,
) -> dict[str, Any]:
    """A sum (Σ value·count) or mean (that over Σ count) of a numeric released column."""
    release.numeric(column)
    total = release.answer(constraints, confidence, weight_column=column)
    if kind == "sum":
        return total.to_dict()
    count = release.answer(constraints, confidence)
    values = [float(v) for name, _, listed in release.columns if name == column for v in listed]  # type: ignore[arg-type]
    bottom, top = min(values), max(values)
    value = (bottom + top) / 2 if count.value < 1 else total.value / count.value
    low, high = mean_interval(
        (total.low, total.high), (round(count.low), round(count.high)), bottom, top
    )
    document = total.to_dict()
    document["released"] = min(top, max(bottom, value))
    document["interval"] = {
        **document["interval"],
        "low": low,
        "high": high,
        "method": (
            "the sum and the count over the released cells, each within its union bound; "
            "the mean between their extreme ratios, within the listed values' range"
        ),
        "covers": "the mean of the column over the rows the release counted",
    }
    return document


def answer_from_release(
    document: Mapping[str, Any],
    kind: str,
    *,
    column: str | None,
    values: Sequence[str] | None,
    where: str | None,
    confidence: float,
) -> dict[str, Any]:
    """A count (or a histogram of ``column``) summed from a release's cells: no privacy cost."""
    release = release_from_document(document, str(document.get("release_id", "the release")))
    names = [name for name, _, _ in release.columns]
    constraints = release_constraints(where, names)
    privacy = {
        "private": True,
        "post_processing": True,
        "release": document.get("release_id"),
        "release_epsilon": release.epsilon,
        "cost": 0,
    }
    head = {"query": kind, "where": where, "epsilon": 0, "from_release": document.get("release_id")}
    if kind == "count":
        answer = release.answer(constraints, confidence)
        return {**head, **answer.to_dict(), "privacy": privacy}
    if kind in ("sum", "mean"):
        assert column is not None
        return {
            **head,
            "column": column,
            **_numeric_from_release(release, kind, column, constraints, confidence),
            "privacy": privacy,
        }
    if column is None or column not in names:
        raise CuratorError(
            f"--column: {column!r} is not in the release (its columns: {', '.join(names)})"
        )
    listed = next(listed for name, _, listed in release.columns if name == column)
    chosen = list(listed)
    if values:
        missing = [text for text in values if text not in [str(v) for v in listed]]
        if missing:
            raise CuratorError(f"--values: {missing[0]!r} is not a released value of {column!r}")
        chosen = [v for v in listed if str(v) in values]
    bins = []
    for value in chosen:
        allowed = constraints.get(column)
        if allowed is not None and value not in allowed:
            continue
        answer = release.answer({**constraints, column: [value]}, confidence)
        bins.append({"value": value, **answer.to_dict()})
    return {**head, "column": column, "bins": bins, "privacy": privacy}
