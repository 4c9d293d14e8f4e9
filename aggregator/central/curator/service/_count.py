"""The count query: matching rows, at most K per unit, plus discrete Laplace noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.aggregator.central.curator import _preview as preview
from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator._queries import noisy_count
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._kinds import Query, QueryOptions, register
from deniable.aggregator.central.curator.service._results import Answer, ReleasedValue
from deniable.shared.sampling import ByteSource
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["CountQuery", "check_max_rows"]


def check_max_rows(dataset: Dataset, max_rows: int | None) -> None:
    """--max-rows is a public bound for add-remove; under replace the count's bound is known."""
    if max_rows is None:
        return
    if max_rows < 0:
        raise CuratorError(f"--max-rows must be >= 0, got {max_rows}")
    if dataset.neighbours == "replace":
        raise CuratorError(
            "--max-rows is for add-remove neighbours (under replace the bound is public)"
        )


@register
@dataclass(frozen=True)
class CountQuery(Query):
    """How many rows match ``where`` (each unit counting at most K of them)."""

    kind = "count"
    options: QueryOptions
    max_rows: int | None = None

    @classmethod
    def from_wire(cls, options: QueryOptions, message: pb.CountQuery) -> CountQuery:
        return cls(options, message.max_rows if message.HasField("max_rows") else None)

    def check(self, dataset: Dataset) -> None:
        dataset.condition(self.options.where)
        check_max_rows(dataset, self.max_rows)

    def describe(self) -> str:
        return f"count{self.options.describe()}"

    def _head(self) -> dict[str, Any]:
        return {"query": "count", "where": self.options.where}

    def preview(self, dataset: Dataset) -> Answer:
        result = preview.preview_count(
            self.options.exact_epsilon,
            dataset.neighbours,
            dataset.unit,
            confidence=self.options.confidence,
        )
        return Answer(self.charge(), (), {**self._head(), **result.to_dict()}, preview=True)

    def run(self, dataset: Dataset, source: ByteSource) -> Answer:
        true = dataset.engine.count(dataset.condition(self.options.where), dataset.unit)
        result = noisy_count(
            true,
            self.options.exact_epsilon,
            dataset.neighbours,
            dataset.unit,
            upper=dataset.count_upper(self.max_rows),
            confidence=self.options.confidence,
            source=source,
        )
        document = {**self._head(), **result.to_dict()}
        released = ReleasedValue(None, False, float(result.released), document["interval"])
        return Answer(self.charge(), (released,), document)
