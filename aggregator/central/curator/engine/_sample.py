"""A uniformly random K-subset of each over-K unit's rows, drawn from the OS CSPRNG."""

from __future__ import annotations

import os
import threading

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["FLOYD_MAX_K", "Sampler", "below", "choose"]

FLOYD_MAX_K = 32
"""Up to this K, Floyd's algorithm (K draws per unit, O(K^2) work); above, one key per row."""

Ints = npt.NDArray[np.int64]


def _words(count: int) -> npt.NDArray[np.uint64]:
    return np.frombuffer(os.urandom(8 * count), dtype=np.uint64)


def below(bounds: Ints) -> tuple[Ints, int]:
    """Per bound b >= 1, an integer uniform on [0, b) exactly, and the 64-bit words drawn.

    Rejection as in OpenBSD's arc4random_uniform: a word r is kept when r >= 2^64 mod b,
    leaving a multiple of b equally likely words, so r mod b is exactly uniform.
    """
    b = bounds.astype(np.uint64)
    floor = (np.uint64(0) - b) % b  # 2^64 mod b, in wrapping uint64 arithmetic
    out = np.empty(len(b), dtype=np.uint64)
    todo = np.arange(len(b))
    drawn = 0
    while todo.size:
        words = _words(todo.size)
        drawn += todo.size
        ok = words >= floor[todo]
        out[todo[ok]] = words[ok] % b[todo[ok]]
        todo = todo[~ok]
    return out.astype(np.int64), drawn


def _floyd(n: Ints, k: int) -> tuple[Ints, int]:
    """Floyd's algorithm, vectorized over units: K draws per unit.

    Row u of the result is a uniform K-subset of {0, ..., n[u] - 1} (every n[u] > k): for
    j = n-K .. n-1, draw t uniform in [0, j]; take t, or j when t is already taken.
    """
    chosen = np.empty((len(n), k), dtype=np.int64)
    drawn = 0
    for step in range(k):
        top = n - k + step
        t, words = below(top + 1)
        drawn += words
        taken = (chosen[:, :step] == t[:, None]).any(axis=1)
        chosen[:, step] = np.where(taken, top, t)
    return chosen, drawn


def _by_keys(n: Ints, k: int) -> tuple[Ints, int]:
    """One random 64-bit key per row; each unit keeps its K rows of smallest key.

    A tie among a unit's n keys (probability <= n^2 / 2^65) is broken by row position.
    """
    total = int(n.sum())
    keys = _words(total)
    unit = np.repeat(np.arange(len(n)), n)
    order = np.lexsort((keys, unit))  # by unit, then key
    starts = np.cumsum(n) - n
    first = starts[:, None] + np.arange(k)[None, :]
    return order[first] - starts[:, None], total


def choose(n: Ints, k: int) -> tuple[Ints, int]:
    """Per unit, K distinct row positions in [0, n[u]) uniformly at random (all n > k).

    Returns the (units, K) positions and how many 64-bit words of the CSPRNG were drawn.
    """
    if len(n) == 0:
        return np.empty((0, k), dtype=np.int64), 0
    if k <= FLOYD_MAX_K:
        return _floyd(n, k)
    return _by_keys(n, k)


class Sampler:
    """The vectorized SQL function (n BIGINT, k BIGINT) -> BIGINT[] of K 1-based positions.

    The engine calls it only for units with n > K matching rows (under a CASE), so a unit
    that keeps all its rows draws nothing. ``units`` and ``words`` count the units sampled
    and the CSPRNG words drawn, for tests and the operator.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.units = 0
        self.words = 0

    def __call__(self, n_column: pa.Array, k_column: pa.Array) -> pa.Array:
        n = np.asarray(n_column.to_numpy(zero_copy_only=False), dtype=np.int64)
        ks = np.unique(np.asarray(k_column.to_numpy(zero_copy_only=False), dtype=np.int64))
        if len(ks) > 1 or (len(ks) == 1 and (ks[0] < 1 or (n <= ks[0]).any())):
            raise ValueError("sampling needs one K >= 1 and every unit with more than K rows")
        k = int(ks[0]) if len(ks) else 1
        chosen, words = choose(n, k)
        with self._lock:
            self.units += len(n)
            self.words += words
        offsets = pa.array(np.arange(0, len(n) * k + 1, k, dtype=np.int64), type=pa.int64())
        return pa.LargeListArray.from_arrays(offsets, pa.array(chosen.ravel() + 1))
