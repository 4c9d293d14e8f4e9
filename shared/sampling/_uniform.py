"""Exactly uniform integers below any bound, by rejection from random bytes (no modulo bias)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from deniable.shared.sampling._bernoulli import ByteSource

__all__ = ["MAX_ROUNDS", "uniform_below"]

MAX_ROUNDS = 256
"""Rejection rounds before the source is declared broken (each round rejects w.p. < 1/2)."""

_WORDS: tuple[tuple[int, str], ...] = ((8, "<u1"), (16, "<u2"), (32, "<u4"), (64, "<u8"))


def uniform_below(bound: int, size: int, source: ByteSource) -> NDArray[np.uint64]:
    """Draw ``size`` independent integers uniform on [0, bound) exactly.

    Each draw reads the smallest little-endian word (1, 2, 4 or 8 bytes) that holds
    b = bit_length(bound − 1) bits, keeps its low b bits and accepts them when they are
    below ``bound``; rejected draws are redrawn. Every accepted value has probability
    exactly 1/bound, and a draw is rejected with probability < 1/2, so a source that is
    still rejecting after 256 rounds (probability < 2^−256 per draw) is not random.

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
    pending = np.arange(size)
    for _ in range(MAX_ROUNDS):
        raw = np.frombuffer(source(pending.size * width // 8), dtype=dtype)
        words = raw.astype(np.uint64) & mask
        accepted = words < np.uint64(bound) if bound < 1 << 64 else np.ones(words.size, bool)
        result[pending[accepted]] = words[accepted]
        pending = pending[~accepted]
        if pending.size == 0:
            return result
    raise RuntimeError(
        f"random source rejected {pending.size} draw(s) below {bound} for {MAX_ROUNDS} "
        "rounds in a row; it is not producing uniform random bytes"
    )
