"""Exact discrete Laplace draws whose reads and work do not depend on the noise drawn."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from deniable.shared.sampling._bernoulli import ByteSource
from deniable.shared.sampling._dlaplace import geometric_exp
from deniable.shared.sampling._exp_digits import Shape, exp_neg_bounds, leading_bits

__all__ = ["TAIL_BITS", "WORD_BYTES", "LaplacePlan", "discrete_laplace", "laplace_plan"]

WORD_BYTES = 16
"""Bytes of the uniform each fixed Bernoulli compares (a tie, 2^-128, reads on)."""

TAIL_BITS = 64
"""The fixed bits of |Z| cover all but a tail of probability at most 2^-64."""

_MAX_BITS = 62  # |Z| is an int64


@dataclass(frozen=True)
class LaplacePlan:
    """The fixed Bernoullis of one scale: shapes, their arguments x and 128-bit thresholds.

    Row 0 decides Z = 0, rows 1..J the bits of |Z| − 1, row J + 1 the tail |Z| > 2^J.
    """

    gamma: Fraction
    bits: int
    shapes: tuple[Shape, ...]
    arguments: tuple[Fraction, ...]
    high: NDArray[np.uint64]
    low: NDArray[np.uint64]


def _tail_bits(gamma: Fraction) -> int:
    """The least J with e^(−γ·2^J) <= 2^-TAIL_BITS, decided with certified bounds."""
    bits = 0
    while exp_neg_bounds(gamma * (1 << bits), TAIL_BITS + 8)[1] > Fraction(1, 1 << TAIL_BITS):
        bits += 1
    return bits


@lru_cache(maxsize=256)
def laplace_plan(scale: Fraction) -> LaplacePlan:
    """The thresholds floor(p·2^128) of every fixed Bernoulli at this scale (cached)."""
    gamma = 1 / Fraction(scale)
    bits = _tail_bits(gamma)
    if bits > _MAX_BITS:
        raise ValueError(f"scale {scale} is too large: |noise| would not fit in 62 bits")
    shapes = (Shape.TANH, *[Shape.LOGISTIC] * bits, Shape.EXP)
    arguments = (gamma, *[gamma * (1 << j) for j in range(bits)], gamma * (1 << bits))
    thresholds = [
        leading_bits(s, x, 8 * WORD_BYTES) for s, x in zip(shapes, arguments, strict=True)
    ]
    high = np.array([t >> 64 for t in thresholds], dtype=np.uint64)
    low = np.array([t & ((1 << 64) - 1) for t in thresholds], dtype=np.uint64)
    return LaplacePlan(gamma, bits, shapes, arguments, high, low)


def _resolve_tie(plan: LaplacePlan, row: int, source: ByteSource) -> bool:
    """U < p for a uniform U whose first 128 bits equal p's: compare 64 more bits at a time."""
    shape, x = plan.shapes[row], plan.arguments[row]
    bits = 8 * WORD_BYTES
    while True:
        bits += 64
        digit = leading_bits(shape, x, bits) & ((1 << 64) - 1)
        drawn = int.from_bytes(source(8), "big")
        if drawn != digit:  # p is irrational: its expansion never ends
            return drawn < digit


def discrete_laplace(scale: Fraction, size: int, source: ByteSource) -> NDArray[np.int64]:
    """Exact discrete Laplace draws: P(Z = z) = (1−q)/(1+q)·q^|z| with q = exp(−1/scale).

    |Z| is 0 with probability (1−q)/(1+q) = tanh(γ/2), γ = 1/scale, and otherwise 1 + Y with
    Y geometric, P(Y = y) = (1−q)q^y, and a fair sign (Canonne, Kamath and Steinke 2020 draw
    the same law by rejection). The binary digits of a geometric variable are independent:
    q^y = ∏_j (q^(2^j))^(y_j), so digit j is Bernoulli(q^(2^j)/(1 + q^(2^j))) and the part
    above digit J is geometric with ratio q^(2^J). J is the least with q^(2^J) <= 2^-64.

    Each draw reads, in one call, a 128-bit uniform for each of its J + 2 Bernoullis (zero,
    J digits, "above 2^J") and a sign byte, and compares them with the probabilities'
    exact first 128 bits (:func:`._exp_digits.leading_bits`, integer interval
    arithmetic): the same bytes and the same work whatever Z is. Two events read more:
    a uniform that ties with a probability's 128 bits (2^-128 per Bernoulli), which reads
    64 bits at a time until it differs; and |Z| > 2^J (at most 2^-64 per draw), whose
    part above 2^J is then drawn by :func:`._dlaplace.geometric_exp`, a loop that reads
    more the larger it is. Nothing is rounded: the law is exact.

    Args:
        scale: positive rational scale (the continuous analogue's b), at most about 10^17.
        size: number of draws.
        source: uniform random bytes.

    Returns:
        int64 array of draws.
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    plan = laplace_plan(scale)
    rows = plan.bits + 2
    raw = np.frombuffer(source(size * (rows * WORD_BYTES + 1)), dtype=np.uint8)
    words = raw[: size * rows * WORD_BYTES].view(">u8").reshape(size, rows, 2)
    signs = (raw[size * rows * WORD_BYTES :] & 1).astype(np.int64)
    top, bottom = words[:, :, 0], words[:, :, 1]
    below = (top < plan.high) | ((top == plan.high) & (bottom < plan.low))
    tie = (top == plan.high) & (bottom == plan.low)
    if tie.any():  # probability (J + 2)·2^-128 per draw
        for draw, row in zip(*np.nonzero(tie), strict=True):
            below[draw, row] = _resolve_tie(plan, int(row), source)
    weights = np.left_shift(np.int64(1), np.arange(plan.bits, dtype=np.int64))
    rest = below[:, 1 : plan.bits + 1].astype(np.int64) @ weights
    above = below[:, plan.bits + 1]
    if above.any():  # |Z| > 2^J: probability at most 2^-64 per draw
        extra = 1 + geometric_exp(plan.arguments[-1], int(above.sum()), source)
        limit = (1 << _MAX_BITS) >> plan.bits
        rest[above] += np.minimum(extra, limit) << plan.bits
    magnitude = (1 - below[:, 0].astype(np.int64)) * (1 + rest)
    return np.asarray(magnitude * (1 - 2 * signs), dtype=np.int64)
