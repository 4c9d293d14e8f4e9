"""The sum and mean queries of a column clipped to [min, max] on a grid, K rows per unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.aggregator.central.curator import _preview as preview
from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator._mean import noisy_mean, noisy_mean_public_n
from deniable.aggregator.central.curator._numeric import SumSpec, noisy_sum
from deniable.aggregator.central.curator.engine import SumAggregate
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._kinds import (
    Query,
    QueryOptions,
    finite,
    register,
)
from deniable.aggregator.central.curator.service._results import Answer, ReleasedValue
from deniable.shared.sampling import ByteSource
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["MeanQuery", "SumQuery"]

NUMERIC = ("int", "float")


@dataclass(frozen=True)
class _Numeric(Query):
    """What a sum and a mean share: the column, its clip and grid, the engine's aggregate."""

    options: QueryOptions
    column: str
    low: float
    high: float
    resolution: str | None = None

    def __post_init__(self) -> None:
        finite(self.low, "--min")
        finite(self.high, "--max")
        if not self.low < self.high:
            raise CuratorError(f"--min {self.low!r} must be below --max {self.high!r}")

    @classmethod
    def from_wire(cls, options: QueryOptions, message: pb.NumericQuery) -> Query:
        return cls(options, message.column, message.min, message.max, message.resolution or None)

    def spec(self, dataset: Dataset) -> SumSpec:
        """The clip and grid, checked against the column's type."""
        kind = dataset.column(self.column, "--column")
        if kind not in NUMERIC:
            raise CuratorError(
                f"--column: {self.column!r} is a {kind} column; a {self.kind} needs numbers"
            )
        finite(self.low, "--min")
        finite(self.high, "--max")
        return SumSpec.build(self.column, kind, self.low, self.high, self.resolution)

    def check(self, dataset: Dataset) -> None:
        dataset.condition(self.options.where)
        self.spec(dataset)

    def describe(self) -> str:
        clip = f"[{self.low:g}, {self.high:g}]"
        return f"{self.kind} of {self.column} in {clip}{self.options.describe()}"

    def _head(self) -> dict[str, Any]:
        return {"query": self.kind, "column": self.column, "where": self.options.where}

    def aggregate(self, dataset: Dataset, spec: SumSpec) -> SumAggregate:
        """Σ grid steps and the rows contributing, K rows per unit, from the engine."""
        low, high = spec.unit_range
        return dataset.engine.sum(
            self.column,
            spec.resolution,
            low,
            high,
            dataset.condition(self.options.where),
            dataset.unit,
        )

    def _answer(self, document: dict[str, Any]) -> Answer:
        released = ReleasedValue(None, False, float(document["released"]), document["interval"])
        return Answer(self.charge(), (released,), document)


@register
@dataclass(frozen=True)
class SumQuery(_Numeric):
    """Σ of the clipped, grid-rounded column over matching rows."""

    kind = "sum"

    def preview(self, dataset: Dataset) -> Answer:
        result = preview.preview_sum(
            self.spec(dataset),
            self.options.exact_epsilon,
            dataset.neighbours,
            dataset.unit,
            confidence=self.options.confidence,
        )
        return Answer(self.charge(), (), {**self._head(), **result.to_dict()}, preview=True)

    def run(self, dataset: Dataset, source: ByteSource) -> Answer:
        spec = self.spec(dataset)
        total = self.aggregate(dataset, spec)
        result = noisy_sum(
            total.units,
            spec,
            self.options.exact_epsilon,
            dataset.neighbours,
            dataset.unit,
            rows=dataset.public_rows(),
            confidence=self.options.confidence,
            source=source,
        )
        return self._answer({**self._head(), **result.to_dict()})


@register
@dataclass(frozen=True)
class MeanQuery(_Numeric):
    """The clipped mean: the whole ε over a public N when it is public, else sum / count."""

    kind = "mean"

    def public_n(self, dataset: Dataset) -> int | None:
        """N when the notes' mean applies: replace-one, rows as units, no condition."""
        return None if self.options.where else dataset.public_rows()

    def preview(self, dataset: Dataset) -> Answer:
        spec = self.spec(dataset)
        rows = self.public_n(dataset)
        eps = self.options.exact_epsilon
        level = self.options.confidence
        if rows is not None:
            result = preview.preview_mean_public_n(
                spec, rows, eps, dataset.neighbours, dataset.unit, confidence=level
            )
        else:
            result = preview.preview_mean(
                spec, eps, dataset.neighbours, dataset.unit, confidence=level
            )
        return Answer(self.charge(), (), {**self._head(), **result.to_dict()}, preview=True)

    def run(self, dataset: Dataset, source: ByteSource) -> Answer:
        spec = self.spec(dataset)
        total = self.aggregate(dataset, spec)
        rows = self.public_n(dataset)
        eps = self.options.exact_epsilon
        level = self.options.confidence
        if rows is not None:
            public = noisy_mean_public_n(
                total.units, total.present, rows, spec, eps, dataset.neighbours, dataset.unit,
                confidence=level, source=source,
            )  # fmt: skip
            return self._answer({**self._head(), **public.to_dict()})
        split = noisy_mean(
            total.units, total.present, spec, eps, dataset.neighbours, dataset.unit,
            rows=dataset.public_rows(), confidence=level, source=source,
        )  # fmt: skip
        return self._answer({**self._head(), **split.to_dict()})
