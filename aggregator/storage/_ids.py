"""Report ids and payloads of a batch in columns, and the 64-bit hashes of report ids."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "KEY",
    "IdGroup",
    "ReportIds",
    "SlicedPayloads",
    "UniformPayloads",
    "fingerprints",
    "id_words",
    "repeated_rows",
]

U64 = np.uint64
_M1 = U64(0x9E3779B97F4A7C15)  # odd multipliers of the mixing steps (Fibonacci hashing and
_M2 = U64(0xC2B2AE3D27D4EB4F)  # the xxHash primes)
_M3 = U64(0x165667B19E3779F9)
_S29, _S32 = U64(29), U64(32)

# A key for in-process fingerprints (the check command's duplicate search); the storage keys
# its own with a secret kept in the database, so that they can be stored.
KEY = (secrets.randbits(64), secrets.randbits(64))


def id_words(ids: NDArray[np.uint8]) -> NDArray[np.uint64]:
    """An (m, length) id matrix as (m, ceil(length / 8)) little-endian words, zero padded."""
    count, length = ids.shape
    width = -(-length // 8)
    if length == width * 8 and ids.flags.c_contiguous:
        return ids.view("<u8").reshape(count, width).astype(U64, copy=False)
    padded = np.zeros((count, width * 8), dtype=np.uint8)
    padded[:, :length] = ids
    return padded.view("<u8").astype(U64, copy=False)


def fingerprints(ids: NDArray[np.uint8], key: tuple[int, int] = KEY) -> NDArray[np.uint64]:
    """The keyed 64-bit fingerprint of each row of an (m, length) matrix of ASCII ids.

    Each 8-byte word is absorbed with a multiply and an xor-shift, as in the mixing steps of
    xxHash and MurmurHash3, starting from a state that depends on the key and the id length
    (ids never contain a zero byte, so the zero padding is unambiguous). Without the key a
    client cannot choose ids that share a fingerprint: a match is only ever a hint, and ids
    are always compared in full, but many matches would slow the server down.
    """
    count, length = ids.shape
    columns = np.ascontiguousarray(id_words(ids).T)
    start = (key[0] ^ (length * 0x9E3779B97F4A7C15)) & 0xFFFFFFFFFFFFFFFF
    state: NDArray[np.uint64] = np.bitwise_xor(columns[0], U64(start))
    scratch = np.empty(count, dtype=U64)
    _mix(state, scratch, _M1, _S29)
    for column in columns[1:]:
        np.bitwise_xor(state, column, out=state)
        _mix(state, scratch, _M1, _S29)
    np.bitwise_xor(state, U64(key[1]), out=state)
    _mix(state, scratch, _M2, _S32)
    _mix(state, scratch, _M3, _S29)
    return state


def _mix(state: NDArray[np.uint64], scratch: NDArray[np.uint64], m: U64, s: U64) -> None:
    np.multiply(state, m, out=state)
    np.right_shift(state, s, out=scratch)
    np.bitwise_xor(state, scratch, out=state)


def repeated_rows(ids: NDArray[np.uint8]) -> bool:
    """Whether two rows of an (m, length) id matrix are equal.

    The rows are sorted by the sum of their words (cheap, and unkeyed: equal sums of
    different ids only cost a full comparison), and only rows with equal sums are compared.
    """
    if len(ids) < 2:
        return False
    words = id_words(ids)
    columns = np.ascontiguousarray(words.T)
    sums = columns[0].copy()
    for column in columns[1:]:
        np.add(sums, column, out=sums)
    ordered = np.sort(sums)
    if not (ordered[1:] == ordered[:-1]).any():
        return False
    order = np.lexsort(words.T[::-1])
    sorted_words = words[order]
    return bool((sorted_words[1:] == sorted_words[:-1]).all(axis=1).any())


@dataclass(frozen=True)
class IdGroup:
    """The ids of one length among a batch's reports.

    Attributes:
        rows: the reports' positions in the batch, ascending.
        ids: their ids, one row of ASCII bytes each (shape ``(len(rows), length)``).
    """

    rows: NDArray[np.intp]
    ids: NDArray[np.uint8]
    _prints: list[NDArray[np.uint64]] = field(default_factory=list, repr=False, compare=False)

    @property
    def fingerprints(self) -> NDArray[np.uint64]:
        """:func:`fingerprints` of ``ids`` under this process's key (computed once)."""
        if not self._prints:
            self._prints.append(fingerprints(self.ids))
        return self._prints[0]


class ReportIds(Sequence[bytes]):
    """A batch's distinct report ids, grouped by length as matrices.

    Indexing gives one id as bytes (for messages and tests); the storage reads
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
