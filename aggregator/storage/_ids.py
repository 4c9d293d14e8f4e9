"""Report ids and payloads of a batch in columns: what the storage's id index reads."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import overload

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "KEY",
    "IdGroup",
    "ReportIds",
    "UniformPayloads",
    "fingerprints",
    "kernels",
    "warm_up",
]

# Keyed per process, so that clients cannot choose ids that collide in the id table
# (which would only slow it down: ids are always compared in full).
KEY = np.uint64(secrets.randbits(64))


@cache
def kernels() -> ModuleType:
    """The compiled loops, imported (and compiled, or loaded from numba's cache) on first use.

    The first call in a process takes a few tenths of a second; a daemon makes it when it
    opens its storage (:func:`warm_up`), not on its first batch.
    """
    from deniable.aggregator.storage import _id_kernels

    return _id_kernels


@cache
def warm_up() -> None:
    """Load every compiled loop once (each process pays this once)."""
    from deniable.aggregator.storage._id_table import IdTable

    table = IdTable(1)
    ids = np.zeros((1, 1), dtype=np.uint8)
    table.claim(ids, fingerprints(ids), np.zeros(1, dtype=np.int64))
    table.truncate(0)
    k = kernels()
    small, large = np.zeros(2, dtype=np.uint64), np.zeros(4, dtype=np.uint64)
    k.insert_rows(small, np.ones(1, dtype=np.uint64), 0, 1)
    k.regrow(small, large, 1)
    k.pack_hex(np.zeros((1, 2), dtype=np.uint8))
    allowed = np.ones(256, dtype=np.bool_)
    for records in (np.zeros((1, 3), dtype=np.uint8), np.frombuffer(bytes(3), np.uint8)):
        # writable, and read-only as requests' bytes are: numba compiles each kind apart
        k.scan_uniform(records.reshape(1, 3), 1, 2, allowed, KEY)


def fingerprints(ids: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """This process's keyed 64-bit fingerprint of each row of an (m, length) id matrix."""
    result: NDArray[np.uint64] = kernels().fingerprints(np.ascontiguousarray(ids), KEY)
    return result


@dataclass(frozen=True)
class IdGroup:
    """The ids of one length among a batch's reports.

    Attributes:
        rows: the reports' positions in the batch, ascending.
        ids: their ids, one row of ASCII bytes each (shape ``(len(rows), length)``).
        fingerprints: :func:`fingerprints` of ``ids``.
    """

    rows: NDArray[np.intp]
    ids: NDArray[np.uint8]
    fingerprints: NDArray[np.uint64]


class ReportIds(Sequence[bytes]):
    """A batch's distinct report ids, grouped by length as matrices with fingerprints.

    Indexing gives one id as bytes (for messages and tests); the id index reads
    :attr:`groups`, so no bytes object is made per report on the hot path.
    """

    def __init__(self, count: int, groups: Sequence[IdGroup]) -> None:
        self.size = count
        self.groups = tuple(groups)

    @classmethod
    def of(cls, ids: Sequence[bytes]) -> ReportIds:
        """Group a list of ids (of any lengths) by length."""
        lengths = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
        groups = []
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            joined = b"".join([ids[row] for row in rows.tolist()])
            matrix = np.frombuffer(joined, dtype=np.uint8).reshape(len(rows), length)
            groups.append(IdGroup(rows, matrix, fingerprints(matrix)))
        return cls(len(ids), groups)

    @classmethod
    def uniform(cls, ids: NDArray[np.uint8]) -> ReportIds:
        """Ids of one length, as the rows of a matrix."""
        return cls(len(ids), [IdGroup(np.arange(len(ids)), ids, fingerprints(ids))])

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
        for group in self.groups:
            at = int(np.searchsorted(group.rows, row))
            if at < len(group.rows) and group.rows[at] == row:
                return bytes(group.ids[at].tobytes())
        raise AssertionError(f"row {row} is in no id group")  # pragma: no cover

    def __iter__(self) -> Iterator[bytes]:
        return (self[i] for i in range(self.size))


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
