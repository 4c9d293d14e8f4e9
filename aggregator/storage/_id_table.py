"""An open-addressing table of report ids of one length, compiled, with exact comparison."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from aggregator.storage._ids import kernels

__all__ = ["IdTable"]

_MIN_CAPACITY = 1 << 9
# From this capacity on, the next, larger arrays are prepared by a background thread.
_BACKGROUND_FROM = 1 << 15
# Once they are ready, each claim copies at least this many later ids into them.
_CATCH_UP = 1 << 13


@dataclass
class _Arrays:
    """An arena of ``capacity`` ids with fingerprints and references, and its table."""

    table: NDArray[np.uint64]  # (2 * capacity, 2): fingerprint (0: empty), arena row
    arena: NDArray[np.uint8]
    fps: NDArray[np.uint64]
    refs: NDArray[np.int64]

    @classmethod
    def empty(cls, capacity: int, length: int) -> _Arrays:
        return cls(
            np.zeros((2 * capacity, 2), dtype=np.uint64),
            np.zeros((capacity, length), dtype=np.uint8),
            np.zeros(capacity, dtype=np.uint64),
            np.zeros(capacity, dtype=np.int64),
        )

    @property
    def capacity(self) -> int:
        return len(self.fps)


@dataclass
class _Growth:
    """Larger arrays being filled in the background with the first ``rows`` ids."""

    rows: int
    arrays: _Arrays
    thread: threading.Thread = field(init=False)


def _grown(old: _Arrays, rows: int, capacity: int) -> _Arrays:
    """New arrays of ``capacity`` holding ``old``'s first ``rows`` ids, every page touched."""
    length = old.arena.shape[1]
    new = _Arrays(
        np.empty((2 * capacity, 2), dtype=np.uint64),
        np.empty((capacity, length), dtype=np.uint8),
        np.empty(capacity, dtype=np.uint64),
        np.empty(capacity, dtype=np.int64),
    )
    k = kernels()
    for target, source in ((new.arena, old.arena), (new.fps, old.fps), (new.refs, old.refs)):
        k.copy_rows(target, source, rows)
    k.rebuild(new.table, new.fps, rows)
    return new


class IdTable:
    """The stored ids of one length in one survey, and a reference for each.

    The ids live in an append-only arena (one row of bytes each) with their fingerprints
    and references; a power-of-two table of fingerprints with twice the arena's capacity,
    so at most half full, points into it by linear probing. Equal fingerprints are only
    a hint: ids are compared in full. Memory: the id's bytes plus 16 bytes per id in the
    arena, and 32 to 64 bytes of table per id.

    Growth doubles the capacity. Once the arena is half full (from ``background_from``
    ids on), a background thread prepares the doubled arrays (copy, rebuild, and the
    page faults of fresh memory, all without the GIL); once they are ready, every claim
    also copies a few of the ids entered since, so that the batch that needs the larger
    arrays finds them complete.
    """

    def __init__(self, length: int, *, background_from: int = _BACKGROUND_FROM) -> None:
        self.length = length
        self.used = 0
        self._background_from = background_from
        self._arrays = _Arrays.empty(_MIN_CAPACITY, length)
        self._growth: _Growth | None = None

    @property
    def capacity(self) -> int:
        """How many ids fit before the arrays grow."""
        return self._arrays.capacity

    def claim(
        self, ids: NDArray[np.uint8], fps: NDArray[np.uint64], refs: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Enter the ids not yet present, in order; per id the reference it had, or -1.

        ``ids`` must be distinct. A new id is stored with its entry of ``refs``.
        """
        if ids.shape[1:] != (self.length,) or not len(ids) == len(fps) == len(refs):
            raise ValueError(f"ids must be an (m, {self.length}) matrix with m fps and refs")
        self._reserve(self.used + len(ids))
        a = self._arrays
        found: NDArray[np.int64]
        found, self.used = kernels().claim(
            a.table, a.arena, a.fps, a.refs, self.used, fps, np.ascontiguousarray(ids), refs
        )
        self._prepare()
        if self._growth is not None and not self._growth.thread.is_alive():
            self._catch_up(self._growth, max(2 * len(ids), _CATCH_UP))
        return found

    def truncate(self, used: int) -> None:
        """Forget every id entered after the first ``used`` (undoing the latest claims)."""
        if not 0 <= used <= self.used:
            raise ValueError(f"cannot truncate {self.used} ids to {used}")
        if self._growth is not None and used < self._growth.rows:
            self._growth.thread.join()  # it copied rows that are about to be overwritten
            self._growth = None
        kernels().remove_rows(self._arrays.table, self._arrays.fps, used, self.used)
        self.used = used

    def settle(self) -> None:
        """Wait for a background preparation to finish (for tests and shutdown)."""
        if self._growth is not None:
            self._growth.thread.join()

    def _prepare(self) -> None:
        capacity = self.capacity
        if self._growth is None and 2 * self.used >= capacity >= self._background_from:
            growth = _Growth(self.used, _Arrays.empty(0, self.length))
            old, rows = self._arrays, self.used

            def run() -> None:
                growth.arrays = _grown(old, rows, 2 * capacity)

            growth.thread = threading.Thread(target=run, name="id-table-growth", daemon=True)
            self._growth = growth
            growth.thread.start()

    def _reserve(self, needed: int) -> None:
        """Grow the arrays to hold ``needed`` ids."""
        if needed <= self.capacity:
            return
        growth, self._growth = self._growth, None
        if growth is not None:
            growth.thread.join()
            if growth.arrays.capacity >= needed:
                self._adopt(growth)
                return
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        self._arrays = _grown(self._arrays, self.used, capacity)

    def _catch_up(self, growth: _Growth, most: int) -> None:
        """Copy up to ``most`` ids entered since ``growth`` was prepared into its arrays.

        A few at each claim, so that the switch has (almost) nothing left to copy.
        """
        new, old, start = growth.arrays, self._arrays, growth.rows
        end = min(self.used, start + most)
        if end > start:
            new.arena[start:end] = old.arena[start:end]
            new.fps[start:end] = old.fps[start:end]
            new.refs[start:end] = old.refs[start:end]
            kernels().insert_rows(new.table, new.fps, start, end)
            growth.rows = end

    def _adopt(self, growth: _Growth) -> None:
        """Switch to prepared arrays, adding the ids entered since they were copied."""
        self._catch_up(growth, self.used)
        self._arrays = growth.arrays
