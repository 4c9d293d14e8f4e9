"""An open-addressing table of report ids of one length, compiled, with exact comparison."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from aggregator.storage._ids import kernels

__all__ = ["IdTable"]

_MIN_SLOTS = 1 << 10


class IdTable:
    """The stored ids of one length in one survey, and a reference for each.

    The ids live in an append-only arena (one row of bytes each) with their fingerprints
    and references; a power-of-two table of fingerprints, kept at most half full, points
    into it by linear probing. Equal fingerprints are only a hint: ids are compared in
    full. Memory: the id's bytes plus 16 bytes per id in the arena, and 32 to 64 bytes
    of table per id (16 bytes per slot, between one quarter and one half full).
    """

    def __init__(self, length: int) -> None:
        self.length = length
        self.used = 0
        self._table = np.zeros((_MIN_SLOTS, 2), dtype=np.uint64)  # fingerprint, arena row
        self._arena = np.zeros((_MIN_SLOTS // 2, length), dtype=np.uint8)
        self._fps = np.zeros(_MIN_SLOTS // 2, dtype=np.uint64)
        self._refs = np.zeros(_MIN_SLOTS // 2, dtype=np.int64)

    def claim(
        self, ids: NDArray[np.uint8], fps: NDArray[np.uint64], refs: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Enter the ids not yet present, in order; per id the reference it had, or -1.

        ``ids`` must be distinct. A new id is stored with its entry of ``refs``.
        """
        if ids.shape[1:] != (self.length,) or not len(ids) == len(fps) == len(refs):
            raise ValueError(f"ids must be an (m, {self.length}) matrix with m fps and refs")
        self._reserve(self.used + len(ids))
        found: NDArray[np.int64]
        found, self.used = kernels().claim(
            self._table,
            self._arena,
            self._fps,
            self._refs,
            self.used,
            fps,
            np.ascontiguousarray(ids),
            refs,
        )
        return found

    def truncate(self, used: int) -> None:
        """Forget every id entered after the first ``used`` (undoing the latest claims)."""
        if not 0 <= used <= self.used:
            raise ValueError(f"cannot truncate {self.used} ids to {used}")
        if used < self.used:
            self.used = used
            kernels().rebuild(self._table, self._fps, used)

    def _reserve(self, needed: int) -> None:
        """Grow the arena to hold ``needed`` ids and the table to stay at most half full."""
        if needed > len(self._arena):
            size = max(needed, 2 * len(self._arena))
            for name in ("_arena", "_fps", "_refs"):
                old = getattr(self, name)
                new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
                new[: self.used] = old[: self.used]
                setattr(self, name, new)
        if 2 * needed > len(self._table):
            slots = len(self._table)
            while 2 * needed > slots:
                slots *= 2
            self._table = np.empty((slots, 2), dtype=np.uint64)  # rebuild zeroes it
            kernels().rebuild(self._table, self._fps, self.used)
