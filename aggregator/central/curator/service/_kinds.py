"""A query kind's interface and registry: one module per kind, registered by its wire name."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, TypeVar

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator._noise import (
    check_confidence,
    check_curator_epsilon,
    exact_epsilon,
)
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._results import Answer, Charge
from deniable.shared.sampling import ByteSource
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["MAX_WHERE", "QUERY_KINDS", "Query", "QueryOptions", "query_from_wire", "register"]

MAX_WHERE = 4096
"""The longest condition a query may have, in characters."""


@dataclass(frozen=True)
class QueryOptions:
    """What every query has: its ε, the intervals' confidence, a condition, preview or not."""

    epsilon: float
    confidence: float = 0.95
    where: str | None = None
    preview: bool = False

    def __post_init__(self) -> None:
        check_curator_epsilon(self.epsilon)
        check_confidence(self.confidence)
        if self.where is not None and len(self.where) > MAX_WHERE:
            raise CuratorError(
                f"--where: {len(self.where):,} characters, at most {MAX_WHERE:,} (the ledger "
                "keeps every query's text)"
            )

    @property
    def exact_epsilon(self) -> Fraction:
        """ε exactly as the decimal written (0.1 is 1/10)."""
        return exact_epsilon(self.epsilon)

    @classmethod
    def from_wire(cls, message: pb.QueryOptions) -> QueryOptions:
        """The options of a request (confidence 0 means the default 0.95)."""
        return cls(
            epsilon=message.epsilon,
            confidence=message.confidence or 0.95,
            where=message.where or None,
            preview=message.preview,
        )

    def describe(self) -> str:
        """`` where …`` for the ledger's query text (empty without a condition)."""
        return f" where {self.where}" if self.where else ""


class Query(ABC):
    """One kind of query: checked against the data set, charged, then run or previewed.

    The service calls :meth:`check` (no data read), then either :meth:`preview` (no data,
    no noise, nothing spent) or spends :meth:`charge` and calls :meth:`run`.
    """

    kind: ClassVar[str]
    options: QueryOptions

    @classmethod
    @abstractmethod
    def from_wire(cls, options: QueryOptions, message: Any) -> Query:
        """The query a request's oneof member describes."""

    @abstractmethod
    def check(self, dataset: Dataset) -> None:
        """Raise CuratorError naming what does not fit the data set's columns and types."""

    def charge(self) -> Charge:
        """What running it spends: ε as written, no δ."""
        return Charge(self.options.exact_epsilon)

    @abstractmethod
    def describe(self) -> str:
        """The query as the ledger records it (``count where age >= 30``)."""

    @abstractmethod
    def preview(self, dataset: Dataset) -> Answer:
        """The interval it would have, from public facts only."""

    @abstractmethod
    def run(self, dataset: Dataset, source: ByteSource) -> Answer:
        """Read the data and release the noisy answer (after the charge was spent)."""


QUERY_KINDS: dict[str, type[Query]] = {}
Q = TypeVar("Q", bound=type[Query])


def register(cls: Q) -> Q:
    """Register a query kind under its wire name (a member of QueryRequest's ``kind``)."""
    if cls.kind in QUERY_KINDS:
        raise ValueError(f"query kind {cls.kind!r} is registered twice")
    QUERY_KINDS[cls.kind] = cls
    return cls


def query_from_wire(request: pb.QueryRequest) -> Query:
    """The query a request describes; CuratorError for none, or an unknown kind."""
    kind = request.WhichOneof("kind")
    if kind is None or kind not in QUERY_KINDS:
        raise CuratorError(f"a query needs one of: {', '.join(sorted(QUERY_KINDS))}")
    return QUERY_KINDS[kind].from_wire(
        QueryOptions.from_wire(request.options), getattr(request, kind)
    )


def finite(value: float, option: str) -> float:
    """``value`` if finite, else an error naming ``option``."""
    if not math.isfinite(value):
        raise CuratorError(f"{option} must be a finite number, got {value!r}")
    return value
