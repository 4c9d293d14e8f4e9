"""Report ids and payloads of a batch in columns, and the 64-bit hashes of report ids."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage.codec._fingerprint import Hasher, default_hasher

__all__ = [
    "IdGroup",
    "ReportIds",
    "SlicedPayloads",
    "UniformPayloads",
    "fingerprints",
    "repeated_rows",
]


def fingerprints(ids: NDArray[np.uint8], hasher: Hasher | None = None) -> NDArray[np.uint64]:
    """The keyed fingerprint of each row of an (m, length) id matrix (:mod:`._fingerprint`).

    Without ``hasher``, the process's default one.
    """
    return (hasher or default_hasher())(ids)


def repeated_rows(ids: NDArray[np.uint8], prints: NDArray[np.uint64]) -> bool:
    """Whether two rows of an (m, length) id matrix are equal, given their fingerprints.

    Only rows with equal fingerprints are compared.
    """
    if len(ids) < 2:
        return False
    ordered = np.sort(prints)
    if not (ordered[1:] == ordered[:-1]).any():
        return False
    rows = np.lexsort(ids.T[::-1])  # rare: sort the rows themselves and compare neighbours
    sorted_ids = ids[rows]
    return bool((sorted_ids[1:] == sorted_ids[:-1]).all(axis=1).any())


@dataclass(frozen=True)
class IdGroup:
    """The ids of one length among a batch's reports.

    Attributes:
        rows: the reports' positions in the batch, ascending.
        ids: their ids, one row of ASCII bytes each (shape ``(len(rows), length)``).
    """

    rows: NDArray[np.intp]
    ids: NDArray[np.uint8]
    _prints: dict[Hasher, NDArray[np.uint64]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def fingerprints(self) -> NDArray[np.uint64]:
        """:func:`fingerprints` of ``ids`` with the default hasher (computed once)."""
        return self.prints_for(default_hasher())

    def prints_for(self, hasher: Hasher) -> NDArray[np.uint64]:
        """:func:`fingerprints` of ``ids`` with ``hasher`` (computed once per hasher)."""
        prints = self._prints.get(hasher)
        if prints is None:
            prints = self._prints[hasher] = hasher(self.ids)
        return prints

    def has_prints(self, hasher: Hasher) -> bool:
        """Whether the fingerprints with ``hasher`` are known already."""
        return hasher in self._prints

    def set_prints(self, hasher: Hasher, prints: NDArray[np.uint64]) -> None:
        """Keep fingerprints computed with ``hasher`` elsewhere (with other ids, at once)."""
        assert len(prints) == len(self.ids)
        self._prints[hasher] = prints


class ReportIds(Sequence[bytes]):
    """A batch's distinct report ids, grouped by length as matrices.

    Indexing gives one id as bytes (for messages and tests); the storage reads
    :attr:`groups`, so no bytes object is made per report on the hot path.
    """

    def __init__(self, count: int, groups: Sequence[IdGroup]) -> None:
        self.size = count
        self.groups = tuple(groups)
        self._one = len(self.groups) == 1 and len(self.groups[0].rows) == count

    @classmethod
    def of(cls, ids: Sequence[bytes]) -> ReportIds:
        """Group a list of ids (of any lengths) by length."""
        lengths = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
        groups = []
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            joined = b"".join([ids[row] for row in rows.tolist()])
            groups.append(IdGroup(rows, np.frombuffer(joined, np.uint8).reshape(-1, length)))
        return cls(len(ids), groups)

    @classmethod
    def uniform(cls, ids: NDArray[np.uint8]) -> ReportIds:
        """Ids of one length, as the rows of a matrix."""
        return cls(len(ids), [IdGroup(np.arange(len(ids)), ids)])

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, row: int) -> bytes: ...
    @overload
    def __getitem__(self, row: slice) -> list[bytes]: ...
    def __getitem__(self, row: int | slice) -> bytes | list[bytes]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(self.size))]
        if not -self.size <= row < self.size:
            raise IndexError(f"report row {row} out of range for {self.size}")
        row %= self.size
        if self._one:  # rows 0..n-1, in order
            return bytes(self.groups[0].ids[row].tobytes())
        for group in self.groups:
            at = int(np.searchsorted(group.rows, row))
            if at < len(group.rows) and group.rows[at] == row:
                return bytes(group.ids[at].tobytes())
        raise AssertionError(f"row {row} is in no id group")  # pragma: no cover

    def __iter__(self) -> Iterator[bytes]:
        return (self[i] for i in range(self.size))

    def take(self, rows: Sequence[int]) -> list[bytes]:
        """The ids at ``rows``, in that order (one pass, for many rows at once)."""
        if not self._one:
            return [self[row] for row in rows]
        ids = self.groups[0].ids
        length = ids.shape[1]
        joined = ids[np.asarray(rows, dtype=np.intp)].tobytes()
        return [joined[at : at + length] for at in range(0, len(joined), length)]


class UniformPayloads(Sequence[bytes]):
    """Payloads of reports identical outside id and bit: a shared stem and one bit each."""

    def __init__(self, stem: bytes, bits: NDArray[np.uint8]) -> None:
        self.stem = stem
        self.bits = bits
        self._both = (stem + b"\x00", stem + b"\x01")

    def __len__(self) -> int:
        return len(self.bits)

    @overload
    def __getitem__(self, row: int) -> bytes: ...
    @overload
    def __getitem__(self, row: slice) -> list[bytes]: ...
    def __getitem__(self, row: int | slice) -> bytes | list[bytes]:
        if isinstance(row, slice):
            return [self._both[bit] for bit in self.bits[row].tolist()]
        return self._both[int(self.bits[row])]


class SlicedPayloads(Sequence[bytes]):
    """Payloads that are slices of one buffer: report ``i`` is ``data[starts[i]:ends[i]]``."""

    def __init__(self, data: bytes, starts: NDArray[np.intp], ends: NDArray[np.intp]) -> None:
        self.data = data
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, row: int) -> bytes: ...
    @overload
    def __getitem__(self, row: slice) -> list[bytes]: ...
    def __getitem__(self, row: int | slice) -> bytes | list[bytes]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        return self.data[int(self.starts[row]) : int(self.ends[row])]
