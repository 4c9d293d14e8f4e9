"""An open-addressing table of report ids of one length, compiled, with exact comparison."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._arena import Column
from deniable.aggregator.storage._growth import Growth, slots
from deniable.aggregator.storage._ids import kernels

__all__ = ["IdTable"]

_MIN_CAPACITY = 1 << 9
# From this capacity on, the next, larger table is prepared by a background thread.
_BACKGROUND_FROM = 1 << 15
# Once it is ready, each claim enters at least this many later ids into it.
_CATCH_UP = 1 << 13
# Slots hold the arena row plus one in 32 bits.
_MAX_CAPACITY = 1 << 31


class IdTable:
    """The stored ids of one length in one survey, and a reference for each.

    The ids live in an append-only arena (one row of bytes each) with their fingerprints
    and references; a power-of-two table of 8-byte slots, twice as many as the ids it is
    sized for, points into it by linear probing. Equal fingerprints are only a hint: ids
    are compared in full. Memory: the id's bytes plus 16 bytes per id in the arena, and
    16 to 32 bytes of table per id.

    Growth doubles the capacity without copying the arena, which grows in place
    (:class:`Column`). From ``background_from`` ids on, once the table is half full, a
    background thread builds the doubled table from the current one, walking both in
    slot order, and faults in the arena's new pages (:class:`Growth`: compiled code and
    ``madvise``, without the GIL); once it is ready, every claim also enters a few of
    the ids entered since, so that the batch that needs the larger table finds it
    complete. Undoing the latest claims takes their ids out of that table too.
    """

    def __init__(self, length: int, *, background_from: int = _BACKGROUND_FROM) -> None:
        self.length = length
        self.used = 0
        self._background_from = background_from
        self._table = slots(_MIN_CAPACITY)
        self._ids = Column(_MIN_CAPACITY, (length,), np.uint8)
        self._fps = Column(_MIN_CAPACITY, (), np.uint64)
        self._refs = Column(_MIN_CAPACITY, (), np.int64)
        self._growth: Growth | None = None
        # The table entered the rows below this in slot order (``regrow``), so that
        # removing them latest first does not apply (see :meth:`truncate`).
        self._ordered_from = 0

    @property
    def capacity(self) -> int:
        """How many ids fit before the table grows."""
        return len(self._table) // 2

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
        found, self.used, _ = kernels().claim(
            self._table,
            self._ids.array,
            self._fps.array,
            self._refs.array,
            self.used,
            fps,
            np.ascontiguousarray(ids),
            refs,
        )
        if self._growth is None:
            self._prepare()
        else:
            self._growth.catch_up(self.used, max(2 * len(ids), _CATCH_UP))
        return found

    def truncate(self, used: int) -> None:
        """Forget every id entered after the first ``used`` (undoing the latest claims)."""
        if not 0 <= used <= self.used:
            raise ValueError(f"cannot truncate {self.used} ids to {used}")
        if self._growth is not None and not self._growth.truncate(used):
            self._growth = None  # it copied rows that are about to be overwritten
        if used < self._ordered_from:  # rare: a failed commit just as the table grew
            self._rebuild(self.capacity, used)
        else:
            kernels().remove_rows(self._table, self._fps.array, used, self.used)
        self.used = used

    def settle(self) -> None:
        """Wait for a background preparation to finish (for tests and shutdown)."""
        if self._growth is not None:
            self._growth.settle()

    def _grow_arena(self, capacity: int) -> None:
        if capacity > _MAX_CAPACITY:
            raise ValueError(f"an id table holds at most {_MAX_CAPACITY} ids")
        for column in (self._ids, self._fps, self._refs):
            column.grow(capacity, self.used)

    def _prepare(self) -> None:
        """From half full on, start building the doubled table in the background."""
        capacity = self.capacity
        if 2 * self.used >= capacity >= self._background_from:
            self._grow_arena(2 * capacity)  # in place: no copy, no new page touched yet
            columns = (self._ids, self._fps, self._refs)
            self._growth = Growth(self._table, self.used, 2 * capacity, self._fps, columns)

    def _reserve(self, needed: int) -> None:
        """Grow the table (and the arena) to hold ``needed`` ids."""
        if needed <= self.capacity:
            return
        growth, self._growth = self._growth, None
        if growth is not None:
            table = growth.finish(self.used)
            if table is not None and growth.capacity >= needed:
                self._table, self._ordered_from = table, growth.start
                return
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        self._grow_arena(capacity)
        self._rebuild(capacity, self.used)

    def _rebuild(self, capacity: int, rows: int) -> None:
        """A new table for ``capacity`` ids holding the first ``rows``, entered in row order."""
        table = slots(capacity)
        kernels().insert_rows(table, self._fps.array, 0, rows)
        self._table, self._ordered_from = table, 0
