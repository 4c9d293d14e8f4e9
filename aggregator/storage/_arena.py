"""Arrays that grow in place (Linux ``mremap``) instead of being copied, and page prefaulting."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Column", "prefault"]

# Linux 5.14+: fault pages in, writable, without touching their contents.
_MADV_POPULATE_WRITE = 23
_REMAP = sys.platform == "linux" and hasattr(mmap, "MAP_PRIVATE")


def _libc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except OSError:  # pragma: no cover - every Linux has a C library
        return None
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    return libc


_LIBC = _libc()


class Column:
    """A growable array of ``capacity`` rows of ``row_shape``, zero when created.

    On Linux the rows live in a private anonymous mapping that :meth:`grow` extends with
    ``mremap``: the rows already written keep their pages, so growing copies nothing and
    touches no memory (fresh memory is costly to fault in, above all in a virtual
    machine). Elsewhere, or if a view of the rows is still alive, growing copies them.

    ``array`` is the only view this object hands out; callers must not keep views of it
    across :meth:`grow`, which replaces it.
    """

    def __init__(
        self,
        capacity: int,
        row_shape: tuple[int, ...],
        dtype: type[np.generic],
        *,
        remap: bool | None = None,
    ) -> None:
        remap = _REMAP if remap is None else remap
        self._row_shape = row_shape
        self._dtype = np.dtype(dtype)
        self._row_bytes = int(np.prod(row_shape, dtype=np.int64)) * self._dtype.itemsize
        self._map: mmap.mmap | None = self._mapping(capacity) if remap else None
        self.capacity = capacity
        self.array: NDArray[Any] = (
            self._view(capacity)
            if self._map is not None
            else np.zeros((capacity, *row_shape), dtype=self._dtype)
        )

    def _mapping(self, capacity: int) -> mmap.mmap:
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        return mmap.mmap(-1, max(capacity * self._row_bytes, 1), flags=flags)

    def _view(self, capacity: int) -> NDArray[Any]:
        assert self._map is not None
        count = capacity * self._row_bytes // self._dtype.itemsize
        flat = np.frombuffer(self._map, dtype=self._dtype, count=count)
        return flat.reshape((capacity, *self._row_shape))

    def grow(self, capacity: int, keep: int) -> None:
        """Make room for ``capacity`` rows, keeping the first ``keep`` (the rest: unspecified)."""
        if capacity <= self.capacity:
            return
        if self._map is not None:
            self.array = np.zeros((0, *self._row_shape), dtype=self._dtype)  # no view now
            try:
                self._map.resize(capacity * self._row_bytes)
            except (BufferError, OSError, SystemError, ValueError):
                old = self._map
                self._map = self._mapping(capacity)
                self._map[: keep * self._row_bytes] = old[: keep * self._row_bytes]
            self.capacity = capacity
            self.array = self._view(capacity)
            return
        grown = np.zeros((capacity, *self._row_shape), dtype=self._dtype)
        grown[:keep] = self.array[:keep]
        self.capacity, self.array = capacity, grown

    def prefault(self, start: int, end: int) -> None:
        """Fault in the pages of rows ``start`` to ``end`` ahead of their first write."""
        if self._map is not None and end > start:
            prefault(self.array[start:end])


def prefault(view: NDArray[Any]) -> None:
    """Fault in the pages under ``view`` writable, without changing them (best effort).

    ``MADV_POPULATE_WRITE`` does not write to memory, so it is safe while other threads
    write to the same pages. The call releases the GIL (ctypes). Kernels before 5.14
    refuse it; then the pages are faulted in when first written, as usual.
    """
    if _LIBC is None or not view.nbytes:
        return
    page = mmap.PAGESIZE
    start = view.ctypes.data
    aligned = start - start % page
    _LIBC.madvise(aligned, start + view.nbytes - aligned, _MADV_POPULATE_WRITE)
