"""Compiled loops (numba) for report-id fingerprints and the open-addressing id table.

Kept to plain loops over numpy arrays; :mod:`aggregator.storage._ids` and
:mod:`aggregator.storage._id_table` wrap them with types and checks. Every kernel releases
the GIL (``nogil``) and is cached on disk after its first compilation (``cache``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# FNV-1a's 64-bit prime, and murmur3's fmix64 constants for the final avalanche.
_FNV_PRIME = np.uint64(0x100000001B3)
_MIX_1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX_2 = np.uint64(0xC4CEB9FE1A85EC53)
_ONE = np.uint64(1)
_SHIFT = np.uint64(33)


@njit(cache=True, nogil=True)
def fingerprints(ids, key):  # type: ignore[no-untyped-def]
    """A keyed 64-bit hash of each row of ``ids`` ((m, length) uint8), never 0."""
    count, length = ids.shape
    out = np.empty(count, np.uint64)
    for i in range(count):
        h = key ^ (np.uint64(length) * _FNV_PRIME)
        for j in range(length):
            h = (h ^ np.uint64(ids[i, j])) * _FNV_PRIME
        h ^= h >> _SHIFT
        h *= _MIX_1
        h ^= h >> _SHIFT
        h *= _MIX_2
        h ^= h >> _SHIFT
        out[i] = h | _ONE  # 0 marks an empty slot
    return out


@njit(cache=True, nogil=True)
def claim(table, arena, arena_fps, arena_refs, used, fps, ids, refs):  # type: ignore[no-untyped-def]
    """Look up each id and enter the ones not present; (reference found or -1 each, used).

    ``table`` has a row per slot: a fingerprint (0: empty) and the arena row of its id;
    slots are probed linearly. An id is present only if a slot with its fingerprint points
    to an arena row with exactly its bytes; then its reference is returned. A new id is
    appended to the arena with its fingerprint and ``refs`` entry. The caller keeps the
    load at most one half and the arena large enough for every id.
    """
    mask = np.uint64(table.shape[0] - 1)
    count, length = ids.shape
    found = np.empty(count, np.int64)
    for i in range(count):
        f = fps[i]
        s = f & mask
        while True:
            t = table[s, 0]
            if t == 0:
                table[s, 0] = f
                table[s, 1] = used
                for j in range(length):
                    arena[used, j] = ids[i, j]
                arena_fps[used] = f
                arena_refs[used] = refs[i]
                found[i] = -1
                used += 1
                break
            if t == f:
                row = table[s, 1]
                same = True
                for j in range(length):
                    if arena[row, j] != ids[i, j]:
                        same = False
                        break
                if same:
                    found[i] = arena_refs[row]
                    break
            s = (s + _ONE) & mask
    return found, used


@njit(cache=True, nogil=True)
def rebuild(table, arena_fps, used):  # type: ignore[no-untyped-def]
    """Refill ``table`` with the first ``used`` arena rows (distinct ids)."""
    mask = np.uint64(table.shape[0] - 1)
    table[:, :] = 0
    for row in range(used):
        f = arena_fps[row]
        s = f & mask
        while table[s, 0] != 0:
            s = (s + _ONE) & mask
        table[s, 0] = f
        table[s, 1] = row
