"""The histogram query: over a public list of values, or DP key selection over those present."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator import _preview as preview
from deniable.aggregator.central.curator._base import CuratorError, Value
from deniable.aggregator.central.curator._queries import noisy_histogram, parse_values
from deniable.aggregator.central.curator._selection import check_delta, select_keys
from deniable.aggregator.central.curator.engine import Key, parse_key
from deniable.aggregator.central.curator.service._count import check_max_rows
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._kinds import Query, QueryOptions, register
from deniable.aggregator.central.curator.service._results import Answer, Charge, ReleasedValue
from deniable.shared.sampling import ByteSource
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["HistogramQuery"]


def _order(value: Value) -> tuple[int, str, float]:
    """None first, then numbers, then text: a total order over a column's values."""
    if value is None:
        return (0, "", 0.0)
    if isinstance(value, str):
        return (2, value, 0.0)
    return (1, "", float(value))


@register
@dataclass(frozen=True)
class HistogramQuery(Query):
    """Counts per value of ``column`` (each unit at most K rows), listed or selected."""

    kind = "histogram"
    options: QueryOptions
    column: str
    values: tuple[str, ...] = ()
    delta: float = 0.0
    max_rows: int | None = None

    def __post_init__(self) -> None:
        if self.delta:
            check_delta(self.delta)

    @classmethod
    def from_wire(cls, options: QueryOptions, message: pb.HistogramQuery) -> HistogramQuery:
        return cls(
            options,
            message.column,
            tuple(message.values),
            message.delta,
            message.max_rows if message.HasField("max_rows") else None,
        )

    @property
    def selects(self) -> bool:
        """True for DP key selection (no public list of values)."""
        return not self.values

    def _key(self, dataset: Dataset) -> Key:
        return parse_key(self.column, dataset.engine.columns)

    def _listed(self, dataset: Dataset) -> list[Value]:
        kind = dataset.column(self._key(dataset).column, "--column")
        return parse_values(kind, self.column, self.values, "--values")

    def check(self, dataset: Dataset) -> None:
        dataset.condition(self.options.where)
        self._key(dataset)
        check_max_rows(dataset, self.max_rows)
        if self.selects:
            if not self.delta:
                raise CuratorError(
                    "--values: list the public values of the column, or give --delta for DP "
                    "key selection over the values present (a value read from the data "
                    "would reveal that somebody has it)"
                )
            check_delta(self.delta)
        else:
            if self.delta:
                raise CuratorError("--delta is for key selection: not used with --values")
            self._listed(dataset)

    def charge(self) -> Charge:
        delta = Fraction(repr(float(self.delta))) if self.selects else Fraction(0)
        return Charge(self.options.exact_epsilon, delta)

    def describe(self) -> str:
        how = "selected keys" if self.selects else "listed values"
        return f"histogram of {self.column} ({how}){self.options.describe()}"

    def _head(self) -> dict[str, Any]:
        return {"query": "histogram", "column": self.column, "where": self.options.where}

    def preview(self, dataset: Dataset) -> Answer:
        if self.selects:
            result = preview.preview_selection(
                self.options.exact_epsilon,
                self.charge().delta,
                dataset.neighbours,
                dataset.unit,
                confidence=self.options.confidence,
            )
        else:
            result = preview.preview_histogram(
                self.options.exact_epsilon,
                dataset.neighbours,
                dataset.unit,
                confidence=self.options.confidence,
            )
        return Answer(self.charge(), (), {**self._head(), **result.to_dict()}, preview=True)

    def run(self, dataset: Dataset, source: ByteSource) -> Answer:
        where = dataset.condition(self.options.where)
        key = self._key(dataset)
        if self.selects:
            counts = dataset.engine.histogram(key, where, dataset.unit)
            selection = select_keys(
                counts,
                self.options.exact_epsilon,
                self.charge().delta,
                dataset.neighbours,
                dataset.unit,
                confidence=self.options.confidence,
                source=source,
            )
            document = {**self._head(), **selection.to_dict()}
            interval = document.pop("interval")
            bins = [
                {
                    "value": item["key"],
                    "released": item["released"],
                    "interval": {**interval, "low": item["low"], "high": item["high"]},
                }
                for item in document.pop("released")
            ]
            # Sorted by value: the engine's order of groups is nobody's business.
            document["bins"] = sorted(bins, key=lambda item: _order(item["value"]))
        else:
            listed = self._listed(dataset)
            # The engine gives exactly the listed keys, in their order, 0 when absent.
            found = dataset.engine.histogram(key, where, dataset.unit, values=listed)
            result = noisy_histogram(
                [(value, n) for value, (_, n) in zip(listed, found, strict=True)],
                self.options.exact_epsilon,
                dataset.neighbours,
                dataset.unit,
                upper=dataset.count_upper(self.max_rows),
                confidence=self.options.confidence,
                source=source,
            )
            document = {**self._head(), **result.to_dict()}
        released = tuple(
            ReleasedValue(item["value"], True, float(item["released"]), item["interval"])
            for item in document["bins"]
        )
        return Answer(self.charge(), released, document)
