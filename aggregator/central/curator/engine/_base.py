"""The engine's interface: exact, contribution-bounded aggregates of one open data source."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import TracebackType

from deniable.aggregator.central.curator._base import PrivacyUnit, Value
from deniable.aggregator.central.curator.engine._sql import Condition, Key

__all__ = ["BOUNDING_RULE", "Engine", "SumAggregate"]

BOUNDING_RULE = (
    "filter first, then each unit keeps at most K of its matching rows (for sum: its "
    "matching rows with a value), chosen uniformly at random, then aggregate"
)


@dataclass(frozen=True)
class SumAggregate:
    """The exact bounded sum of a column, in units of its resolution.

    Attributes:
        units: the sum of every kept row's clamp(round(value / resolution), lo, hi).
        present: how many rows contributed (kept rows with a non-missing value).
    """

    units: int
    present: int


class Engine(ABC):
    """One open data source answering exact aggregates; the mechanism layer adds the noise.

    Bounding rule, for every aggregate: filter first, then each unit keeps at most K of its
    matching rows (for ``sum``: its matching rows with a value), chosen uniformly at random
    with the OS CSPRNG, then aggregate. ``count`` needs no randomness: Σ_u min(n_u, K) is
    the count of any K-subset. With rows as units (no privacy unit column) nothing is
    dropped. Rows whose unit is missing (NULL) form one unit together.

    Methods are safe to call from several threads at once.

    Attributes:
        description: the source for messages, e.g. "staff.parquet (Parquet)".
        columns: name -> 'int' | 'float' | 'str' | 'bool'; a column of any other SQL type
            maps to that type's name, and queries that use it are refused naming the type.
    """

    description: str
    columns: Mapping[str, str]

    @abstractmethod
    def row_count(self) -> int:
        """N, the number of rows of the source."""

    @abstractmethod
    def unit_count(self, unit: PrivacyUnit) -> int:
        """The number of distinct units (N when rows are units; NULL ids are one unit)."""

    @abstractmethod
    def count(self, where: Condition | None, unit: PrivacyUnit) -> int:
        """Σ over units of min(rows matching ``where``, K): exact, no randomness."""

    @abstractmethod
    def histogram(
        self,
        key: Key,
        where: Condition | None,
        unit: PrivacyUnit,
        values: Sequence[Value | bool] | None = None,
    ) -> Iterator[tuple[Value | bool, int]]:
        """Per key value, the count after bounding (filter: ``where`` and the key listed).

        With ``values``: exactly those keys, in that order (0 when absent). None: every
        key present, streamed in batches (memory bounded by the batch), for DP key
        selection. A missing key (NULL) is the key None.
        """

    @abstractmethod
    def sum(
        self,
        column: str,
        resolution: Fraction,
        lo_units: int,
        hi_units: int,
        where: Condition | None,
        unit: PrivacyUnit,
    ) -> SumAggregate:
        """Each kept row with a value adds clamp(round(value / resolution), lo, hi).

        A value is missing when NULL (or NaN). Rounding is half up, floor(x + 0.5), in
        binary64 (PostgreSQL NUMERIC columns: in exact decimal); ±infinity clamps to the
        bound. The clamp makes each row's contribution exactly in [lo_units, hi_units].
        """

    @abstractmethod
    def contingency(
        self,
        columns: Sequence[str],
        values: Sequence[Sequence[Value | bool]],
        where: Condition | None,
        unit: PrivacyUnit,
    ) -> dict[tuple[Value | bool, ...], int]:
        """Per combination of listed values (every one, 0 when absent), the bounded count.

        The filter is ``where`` and every column's value listed (None lists NULL).
        """

    @abstractmethod
    def close(self) -> None:
        """Release the source (connections, temporary files)."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
