"""Compiled loops (numba): report-id fingerprints, the uniform batch scan, the id table.

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
def _fingerprint(ids, i, key):  # type: ignore[no-untyped-def]
    # Four FNV-1a lanes over bytes j = 0, 1, 2, 3 (mod 4), so that the multiplications of
    # different lanes overlap; then the lanes are folded and avalanched (murmur3 fmix64).
    length = ids.shape[1]
    h0 = key ^ (np.uint64(length) * _FNV_PRIME)
    h1 = h0 ^ _MIX_1
    h2 = h0 ^ _MIX_2
    h3 = h1 ^ _MIX_2
    j = 0
    while j + 4 <= length:
        h0 = (h0 ^ np.uint64(ids[i, j])) * _FNV_PRIME
        h1 = (h1 ^ np.uint64(ids[i, j + 1])) * _FNV_PRIME
        h2 = (h2 ^ np.uint64(ids[i, j + 2])) * _FNV_PRIME
        h3 = (h3 ^ np.uint64(ids[i, j + 3])) * _FNV_PRIME
        j += 4
    while j < length:
        h0 = (h0 ^ np.uint64(ids[i, j])) * _FNV_PRIME
        j += 1
    h = h0
    for lane in (h1, h2, h3):
        h = (h ^ (h >> _SHIFT)) * _MIX_1 ^ lane
    h ^= h >> _SHIFT
    h *= _MIX_1
    h ^= h >> _SHIFT
    h *= _MIX_2
    h ^= h >> _SHIFT
    return h | _ONE  # 0 marks an empty slot


@njit(cache=True, nogil=True)
def fingerprints(ids, key):  # type: ignore[no-untyped-def]
    """A keyed 64-bit hash of each row of ``ids`` ((m, length) uint8), never 0."""
    out = np.empty(ids.shape[0], np.uint64)
    for i in range(ids.shape[0]):
        out[i] = _fingerprint(ids, i, key)
    return out


@njit(cache=True, nogil=True)
def scan_uniform(records, id_start, id_end, allowed, key):  # type: ignore[no-untyped-def]
    """Check records that should differ only in id and last byte; (ok, ids, fingerprints).

    ``records`` is (count, size) uint8. Every record must equal the first outside
    ``[id_start, id_end)`` and its last byte, every id byte must be ``allowed`` and every
    last byte 0 or 1. The ids are copied out as an (count, id length) matrix.
    """
    count, size = records.shape
    length = id_end - id_start
    ids = np.empty((count, length), np.uint8)
    prints = np.empty(count, np.uint64)
    for i in range(count):
        if records[i, size - 1] > 1:
            return False, ids, prints
        for j in range(id_start):
            if records[i, j] != records[0, j]:
                return False, ids, prints
        for j in range(id_end, size - 1):
            if records[i, j] != records[0, j]:
                return False, ids, prints
        for j in range(length):
            byte = records[i, id_start + j]
            if not allowed[byte]:
                return False, ids, prints
            ids[i, j] = byte
        prints[i] = _fingerprint(ids, i, key)
    return True, ids, prints


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
def insert_rows(table, arena_fps, start, end):  # type: ignore[no-untyped-def]
    """Enter arena rows ``start`` to ``end`` (distinct ids, not in ``table``) in order."""
    mask = np.uint64(table.shape[0] - 1)
    for row in range(start, end):
        f = arena_fps[row]
        s = f & mask
        while table[s, 0] != 0:
            s = (s + _ONE) & mask
        table[s, 0] = f
        table[s, 1] = row


@njit(cache=True, nogil=True)
def remove_rows(table, arena_fps, start, end):  # type: ignore[no-untyped-def]
    """Take arena rows ``start`` to ``end``, the latest entered, out of ``table``.

    Clearing a slot is enough: the table always holds exactly what entering its rows in
    order gives (``rebuild`` and ``insert_rows`` enter them in order too), and the latest
    row took the first free slot of its probe run, which no earlier row needed to pass.
    Removing rows latest first therefore restores the earlier state exactly.
    """
    mask = np.uint64(table.shape[0] - 1)
    for row in range(end - 1, start - 1, -1):
        f = arena_fps[row]
        s = f & mask
        while not (table[s, 0] == f and table[s, 1] == np.uint64(row)):
            s = (s + _ONE) & mask
        table[s, 0] = 0
        table[s, 1] = 0


@njit(cache=True, nogil=True)
def copy_rows(target, source, count):  # type: ignore[no-untyped-def]
    """Copy the first ``count`` rows of ``source`` and zero the rest of ``target``.

    Writing every page of ``target`` here, off the request path, takes its page faults.
    """
    flat_target = target.reshape(-1)
    flat_source = source.reshape(-1)
    width = flat_target.shape[0] // target.shape[0]
    n = count * width
    for i in range(n):
        flat_target[i] = flat_source[i]
    for i in range(n, flat_target.shape[0]):
        flat_target[i] = 0


@njit(cache=True, nogil=True)
def rebuild(table, arena_fps, used):  # type: ignore[no-untyped-def]
    """Refill ``table`` with the first ``used`` arena rows (distinct ids)."""
    table[:, :] = 0
    insert_rows(table, arena_fps, 0, used)
