"""The doubled id table, prepared by a background thread while the claims go on."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._arena import Column
from deniable.aggregator.storage._ids import kernels

__all__ = ["Growth", "slots"]

log = logging.getLogger("deniable.aggregator")


def slots(capacity: int) -> NDArray[np.uint64]:
    """An empty table for ``capacity`` ids: twice as many slots, so at most half full."""
    return np.zeros(2 * capacity, dtype=np.uint64)


class Growth:
    """A table for ``capacity`` ids, built by a thread while claims go on.

    The thread copies the current table's entries for the first ``start`` arena rows,
    walking both tables in slot order (``regrow``), and faults in the arena's rows for
    the doubled capacity, in compiled code and ``madvise`` without the GIL. Once it is
    done, the claims enter the rows from ``start`` on, in row order, a few at a time
    (:meth:`catch_up`), so that the claim that needs the doubled table takes it from
    :meth:`finish` with nothing or little left to enter.

    The caller must not grow ``fps`` (or the other arena columns) while the thread runs.
    """

    def __init__(
        self,
        old: NDArray[np.uint64],
        start: int,
        capacity: int,
        fps: Column,
        columns: Sequence[Column],
    ) -> None:
        self.start = start
        self.capacity = capacity
        self.rows = start  # the table holds the first ``rows`` rows, once built
        self._fps = fps
        self._table: NDArray[np.uint64] | None = None
        self._thread = threading.Thread(
            target=self._build, args=(old, tuple(columns)), name="id-table-growth", daemon=True
        )
        self._thread.start()

    def catch_up(self, used: int, most: int) -> None:
        """Once built, enter up to ``most`` of the rows from ``rows`` to ``used``."""
        if self._table is None or self._thread.is_alive():
            return
        end = min(used, self.rows + most)
        if end > self.rows:
            kernels().insert_rows(self._table, self._fps.array, self.rows, end)
            self.rows = end

    def finish(self, used: int) -> NDArray[np.uint64] | None:
        """The table with each of the first ``used`` rows (None if building it failed)."""
        self._thread.join()
        self.catch_up(used, used)
        return self._table

    def truncate(self, used: int) -> bool:
        """Forget the rows from ``used`` on, as the arena does; False if the table is stale.

        Rows from ``start`` on were entered in row order after every other entry, so the
        latest come out by clearing their slots: a refused batch, which a client can
        cause at will, costs the ids it claimed, not a new copy of the table. Rows below
        ``start`` were copied in slot order; undoing one of them (rare: a failed commit
        as the preparation began) makes the table useless.
        """
        if used < self.start:
            self._thread.join()  # it reads the current table, which is about to change
            return False
        if self._table is not None and used < self.rows:
            kernels().remove_rows(self._table, self._fps.array, used, self.rows)
            self.rows = used
        return True

    def settle(self) -> None:
        """Wait until the thread is done."""
        self._thread.join()

    def _build(self, old: NDArray[np.uint64], columns: tuple[Column, ...]) -> None:
        try:
            table = slots(self.capacity)
            kernels().regrow(old, table, self.start)
            for column in columns:  # the rows the next claims will write
                column.prefault(self.capacity // 2, self.capacity)
        except Exception:  # out of memory, most likely: the table grows when full instead
            log.exception("preparing a larger id table failed; the table grows when full")
            return
        self._table = table
