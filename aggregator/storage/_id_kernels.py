"""Compiled loops (numba): report-id fingerprints, the uniform batch scan, the id table.

Kept to plain loops over numpy arrays; :mod:`aggregator.storage._ids` and
:mod:`aggregator.storage._id_table` wrap them with types and checks. Every kernel releases
the GIL (``nogil``) and is cached on disk after its first compilation (``cache``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# FNV-1a's 64-bit prime, the golden ratio's, and murmur3's fmix64 constants.
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX_2 = np.uint64(0xC4CEB9FE1A85EC53)
_ONE = np.uint64(1)
_HALF = np.uint64(32)
_SHIFT = np.uint64(33)


@njit(cache=True, nogil=True, inline="always")
def _word(ids, i, j, count):  # type: ignore[no-untyped-def]
    # Bytes j to j + count (at most 8) of row i, little-endian: one load when count is 8.
    w = np.uint64(0)
    for b in range(count):
        w |= np.uint64(ids[i, j + b]) << np.uint64(8 * b)
    return w


@njit(cache=True, nogil=True, inline="always")
def _round(h, w, k):  # type: ignore[no-untyped-def]
    h = (h ^ w) * k
    return h ^ (h >> _HALF)


@njit(cache=True, nogil=True)
def _fingerprint(ids, i, key):  # type: ignore[no-untyped-def]
    # Two lanes of 8-byte words (multiply and fold), so that the multiplications of the
    # lanes overlap; the length is part of the seed, so a zero-padded last word is
    # unambiguous. The lanes are then combined and avalanched (murmur3 fmix64).
    length = ids.shape[1]
    h0 = key ^ (np.uint64(length) * _FNV_PRIME)
    h1 = h0 ^ _MIX_1
    j = 0
    while j + 16 <= length:
        h0 = _round(h0, _word(ids, i, j, 8), _GOLDEN)
        h1 = _round(h1, _word(ids, i, j + 8, 8), _MIX_2)
        j += 16
    if j + 8 <= length:
        h0 = _round(h0, _word(ids, i, j, 8), _GOLDEN)
        j += 8
    if j < length:
        h1 = _round(h1, _word(ids, i, j, length - j), _MIX_2)
    h = (h0 ^ (h0 >> _SHIFT)) * _MIX_1 ^ h1
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
    ``[id_start, id_end)`` and its last byte, every id byte must be ``allowed``, every
    last byte 0 or 1, and no two ids may share a fingerprint (they might be the same id,
    which the caller's exact path tells apart). The ids are copied out as an
    (count, id length) matrix.
    """
    count, size = records.shape
    ids = records[:, id_start:id_end].copy()
    prints = np.empty(count, np.uint64)
    first = records[0]
    # Each column's differences from the first record, ORed (a loop that vectorizes):
    # only the id's columns may differ, and of the last byte only bit 0 (0 or 1).
    differs = np.zeros(size, np.uint8)
    for i in range(1, count):
        row = records[i]
        for j in range(size):
            differs[j] |= row[j] ^ first[j]
    differs[id_start:id_end] = 0
    bad = (differs[size - 1] | first[size - 1]) > 1
    for j in range(size - 1):
        bad |= differs[j] != 0
    flat = ids.reshape(-1)
    for k in range(flat.shape[0]):
        bad |= not allowed[flat[k]]
    if bad:
        return False, ids, prints
    slots = 2
    while slots < 2 * count:
        slots *= 2
    seen = np.zeros(slots, np.uint64)  # the fingerprints so far, by open addressing
    seen_mask = np.uint64(slots - 1)
    for i in range(count):
        f = _fingerprint(ids, i, key)
        prints[i] = f
        s = f & seen_mask
        while seen[s] != 0:
            if seen[s] == f:
                return False, ids, prints
            s = (s + _ONE) & seen_mask
        seen[s] = f
    return True, ids, prints


_NIBBLE = np.full(256, 0xFF, dtype=np.uint8)  # a hex digit's value; 0xFF: not 0-9a-f
_NIBBLE[48:58] = np.arange(10)
_NIBBLE[97:103] = np.arange(10, 16)


@njit(cache=True, nogil=True)
def pack_hex(ids):  # type: ignore[no-untyped-def]
    """Ids of lowercase hex digits (even length), two digits to a byte; (all hex?, packed).

    The first digit goes in the high four bits. If some byte is not one of ``0-9a-f``,
    the first result is False and the packed array must not be used.
    """
    count, length = ids.shape
    packed = np.empty((count, length // 2), np.uint8)
    bad = np.uint8(0)
    for i in range(count):
        for j in range(length // 2):
            high = _NIBBLE[ids[i, 2 * j]]
            low = _NIBBLE[ids[i, 2 * j + 1]]
            bad |= high | low
            packed[i, j] = (high << 4) | (low & 0x0F)
    return bad < 16, packed


# A table slot is one uint64: the fingerprint's high 32 bits (a hint), then the arena row
# plus one in the low 32 bits; 0 marks an empty slot. An id's home slot in a table of 2^k
# slots is its fingerprint's top k bits, so a slot's hint alone gives its home in a table
# twice as large (``regrow``); tables have at most 2^32 slots.
_HIGH = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _shift(table):  # type: ignore[no-untyped-def]
    # 64 - k for a table of 2^k slots: fingerprint >> shift is the home slot.
    k = 0
    while (1 << k) < table.shape[0]:
        k += 1
    return np.uint64(64 - k)


@njit(cache=True, nogil=True)
def _touch(table, fps, shift):  # type: ignore[no-untyped-def]
    # Read each home slot first, in a loop without dependencies between iterations, so
    # that the processor overlaps the cache misses; the probing loop then finds them cached.
    # The callers return the result, so that the reads cannot be optimized away.
    acc = np.uint64(0)
    for i in range(fps.shape[0]):
        acc ^= table[fps[i] >> shift]
    return acc


@njit(cache=True, nogil=True)
def claim(table, arena, arena_fps, arena_refs, used, fps, ids, refs):  # type: ignore[no-untyped-def]
    """Look up each id and enter the ones not present; (reference or -1 each, used, _).

    ``table`` has a slot per entry (see ``_HIGH``); slots are probed linearly. An id is
    present only if a slot with its fingerprint's hint points to an arena row with its
    full fingerprint and exactly its bytes; then its reference is returned. A new id is
    appended to the arena with its fingerprint and ``refs`` entry. The caller keeps the
    load at most one half and the arena large enough for every id.
    """
    mask = np.uint64(table.shape[0] - 1)
    shift = _shift(table)
    count, length = ids.shape
    found = np.empty(count, np.int64)
    touched = _touch(table, fps, shift)
    for i in range(count):
        f = fps[i]
        hint = f >> _HIGH
        s = f >> shift
        while True:
            t = table[s]
            if t == 0:
                table[s] = (hint << _HIGH) | np.uint64(used + 1)
                for j in range(length):
                    arena[used, j] = ids[i, j]
                arena_fps[used] = f
                arena_refs[used] = refs[i]
                found[i] = -1
                used += 1
                break
            if t >> _HIGH == hint:
                row = np.int64(t & _LOW) - 1
                same = arena_fps[row] == f
                if same:
                    for j in range(length):
                        if arena[row, j] != ids[i, j]:
                            same = False
                            break
                if same:
                    found[i] = arena_refs[row]
                    break
            s = (s + _ONE) & mask
    return found, used, touched


@njit(cache=True, nogil=True)
def insert_rows(table, arena_fps, start, end):  # type: ignore[no-untyped-def]
    """Enter arena rows ``start`` to ``end`` (distinct ids, not in ``table``) in order."""
    mask = np.uint64(table.shape[0] - 1)
    shift = _shift(table)
    touched = _touch(table, arena_fps[start:end], shift)
    for row in range(start, end):
        f = arena_fps[row]
        s = f >> shift
        while table[s] != 0:
            s = (s + _ONE) & mask
        table[s] = ((f >> _HIGH) << _HIGH) | np.uint64(row + 1)
    return touched


@njit(cache=True, nogil=True)
def regrow(old, new, rows):  # type: ignore[no-untyped-def]
    """Enter ``old``'s entries for arena rows below ``rows`` into ``new`` (twice the slots).

    Reads ``old`` slot by slot, so that both tables are walked nearly in order (an entry
    in old slot s has its home near 2s in ``new``) instead of at random. ``old`` may gain
    entries for later rows meanwhile (another thread claiming): those are skipped, and the
    entries for rows below ``rows`` never move. The new table's entries are then not in
    row order, which ``remove_rows`` needs (see ``IdTable.truncate``).
    """
    mask = np.uint64(new.shape[0] - 1)
    shift = _shift(new)
    limit = np.uint64(rows)
    for i in range(old.shape[0]):
        t = old[i]
        if t == 0 or (t & _LOW) > limit:
            continue
        s = ((t >> _HIGH) << _HIGH) >> shift
        while new[s] != 0:
            s = (s + _ONE) & mask
        new[s] = t


@njit(cache=True, nogil=True)
def remove_rows(table, arena_fps, start, end):  # type: ignore[no-untyped-def]
    """Take arena rows ``start`` to ``end``, the latest entered, out of ``table``.

    Clearing a slot is enough if the rows were entered after every other row the table
    holds: the latest row took the first free slot of its probe run, which no row entered
    before it needed to pass. Removing rows latest first therefore restores the earlier
    state exactly.
    """
    mask = np.uint64(table.shape[0] - 1)
    shift = _shift(table)
    for row in range(end - 1, start - 1, -1):
        f = arena_fps[row]
        s = f >> shift
        entry = ((f >> _HIGH) << _HIGH) | np.uint64(row + 1)
        while table[s] != entry:
            s = (s + _ONE) & mask
        table[s] = 0
