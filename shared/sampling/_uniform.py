"""Exactly uniform integers below any bound, by rejection from random bytes (no modulo bias)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from deniable.shared.sampling._bernoulli import ByteSource

__all__ = ["MAX_ROUNDS", "candidates", "uniform_below"]

MAX_ROUNDS = 256
"""Rounds of candidates before the source is declared broken (each fails w.p. <= 2^-64)."""

_WORDS: tuple[tuple[int, str], ...] = ((8, "<u1"), (16, "<u2"), (32, "<u4"), (64, "<u8"))


@lru_cache(maxsize=1024)
def candidates(bound: int) -> int:
    """The least R with P(R words all rejected) = ((2^b − bound)/2^b)^R <= 2^-64, exactly."""
    bits = (bound - 1).bit_length()
    rejected = (1 << bits) - bound
    count = 1
    while rejected**count << 64 > 1 << (bits * count):
        count += 1
    return count


def uniform_below(bound: int, size: int, source: ByteSource) -> NDArray[np.uint64]:
    """Draw ``size`` independent integers uniform on [0, bound) exactly.

    Each candidate is the smallest little-endian word (1, 2, 4 or 8 bytes) that holds
    b = bit_length(bound − 1) bits, its low b bits kept; it is accepted when below
    ``bound``, so every accepted value has probability exactly 1/bound. Each draw reads
    R candidates at once (:func:`candidates`: all R are rejected with probability at most
    2^-64) and takes the first accepted one by index arithmetic, so the bytes read and the
    work are the same whatever value is drawn. Only when all R are rejected is the draw
    redone, a round at a time; how many rounds that takes is independent of the value
    finally drawn, and a source still rejecting after 256 rounds is not random.

    Args:
        bound: number of values, 1 <= bound <= 2^64.
        size: number of draws.
        source: uniformly random bytes (``os_source`` for participants).

    Returns:
        uint64 array of length ``size``.

    Raises:
        RuntimeError: the source keeps producing rejected words (a constant source, say).
    """
    if not (1 <= bound <= 1 << 64):
        raise ValueError(f"bound must be between 1 and 2^64, got {bound}")
    result = np.zeros(size, dtype=np.uint64)
    if bound == 1 or size == 0:
        return result
    bits = (bound - 1).bit_length()
    width, dtype = next((w, d) for w, d in _WORDS if bits <= w)
    mask = np.uint64((1 << bits) - 1)
    count = candidates(bound)
    pending = np.arange(size)
    for _ in range(MAX_ROUNDS):
        raw = np.frombuffer(source(pending.size * count * width // 8), dtype=dtype)
        words = (raw.astype(np.uint64) & mask).reshape(pending.size, count)
        accepted = words < np.uint64(bound) if bound < 1 << 64 else np.ones(words.shape, bool)
        if count == 1:
            result[pending] = words[:, 0]
        else:  # the first accepted candidate by index arithmetic (the first one if none)
            result[pending] = np.take_along_axis(words, np.argmax(accepted, axis=1)[:, None], 1)[
                :, 0
            ]
        pending = pending[~accepted.any(axis=1)]
        if pending.size == 0:
            return result
    raise RuntimeError(
        f"random source rejected {pending.size} draw(s) below {bound} for {MAX_ROUNDS} "
        "rounds in a row; it is not producing uniform random bytes"
    )
