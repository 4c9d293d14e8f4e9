"""The fixed-read discrete Laplace sampler: exact thresholds, exact law, ties and the tail."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from deniable.shared.sampling._discrete_laplace import (
    TAIL_BITS,
    WORD_BYTES,
    discrete_laplace,
    laplace_plan,
)
from deniable.shared.sampling._exp_digits import Shape, exp_neg_bounds, leading_bits
from tests.shared._sources import ScriptedSource

SCALES = [Fraction(1, 50), Fraction(1, 3), Fraction(5, 2), Fraction(1024), Fraction(10**9, 7)]


def exp_neg(x: Fraction) -> Decimal:
    """e^(−x) to 120 decimal digits, with Python's correctly rounded decimal exp."""
    return (-(Decimal(x.numerator) / Decimal(x.denominator))).exp()


def reference(shape: Shape, x: Fraction, bits: int) -> int:
    """floor(p·2^bits) from decimal arithmetic at 120 digits (an independent computation)."""
    with localcontext() as context:
        context.prec = 120
        e = exp_neg(x)
        p = {Shape.EXP: e, Shape.LOGISTIC: e / (1 + e), Shape.TANH: (1 - e) / (1 + e)}[shape]
        return int(p * (Decimal(2) ** bits))


@pytest.mark.parametrize("x", [Fraction(1, 3), Fraction(1), Fraction(22, 7), Fraction(89, 2)])
def test_exp_bounds_bracket_the_exponential_tightly(x: Fraction) -> None:
    lo, hi = exp_neg_bounds(x, 200)
    with localcontext() as context:
        context.prec = 120
        e = exp_neg(x)
        assert Decimal(lo.numerator) / Decimal(lo.denominator) <= e
        assert e <= Decimal(hi.numerator) / Decimal(hi.denominator)
    assert hi - lo <= Fraction(1, 1 << 190)


@pytest.mark.parametrize("scale", SCALES)
def test_thresholds_are_the_probabilities_first_128_bits(scale: Fraction) -> None:
    plan = laplace_plan(scale)
    for row, (shape, x) in enumerate(zip(plan.shapes, plan.arguments, strict=True)):
        threshold = (int(plan.high[row]) << 64) | int(plan.low[row])
        assert threshold == reference(shape, x, 128), (row, shape, x)
        assert leading_bits(shape, x, 192) == reference(shape, x, 192)
    # J is the least with q^(2^J) <= 2^-64.
    assert reference(Shape.EXP, plan.arguments[-1], TAIL_BITS + 8) < 1 << 8
    if plan.bits:
        assert reference(Shape.EXP, plan.arguments[-2], TAIL_BITS) >= 1


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(5, 2), Fraction(40)])
def test_the_bits_compose_the_discrete_laplace_law(scale: Fraction) -> None:
    """P(|Z| = m) from the plan's probabilities is (2 − [m = 0])·(1−q)/(1+q)·q^m."""
    plan = laplace_plan(scale)
    with localcontext() as context:
        context.prec = 60
        p = [
            Decimal((int(h) << 64) | int(lo)) / Decimal(2) ** 128
            for h, lo in zip(plan.high, plan.low, strict=True)
        ]
        q = exp_neg(plan.gamma)
        for m in range(0, min(1 << plan.bits, 200)):
            law = (1 - q) / (1 + q) * q**m * (1 if m == 0 else 2)
            if m == 0:
                sampled = p[0]
            else:
                sampled = (1 - p[0]) * (1 - p[-1])
                for j in range(plan.bits):
                    bit = ((m - 1) >> j) & 1
                    sampled *= p[1 + j] if bit else 1 - p[1 + j]
            assert abs(sampled - law) <= Decimal(2) ** -120 * (plan.bits + 2), m


def words(values: list[int], sign: int) -> bytes:
    """One draw's bytes: 128-bit big-endian words, then the sign byte."""
    return b"".join(v.to_bytes(WORD_BYTES, "big") for v in values) + bytes([sign])


def test_a_draw_is_decided_by_its_words_and_sign() -> None:
    plan = laplace_plan(Fraction(5, 2))  # J = 7
    top = (1 << 128) - 1
    # Not zero (the first word is at the top), digits 1, 0, 1, 0..., not in the tail.
    digits = [0 if j % 2 == 0 else top for j in range(plan.bits)]
    source = ScriptedSource([words([top, *digits, top], 1)])
    expected = 1 + sum(1 << j for j in range(0, plan.bits, 2))
    assert discrete_laplace(Fraction(5, 2), 1, source).tolist() == [-expected]
    assert source.requests == [(plan.bits + 2) * WORD_BYTES + 1]
    zero = ScriptedSource([words([0, *digits, top], 1)])  # U < P(Z = 0): zero, whatever else
    assert discrete_laplace(Fraction(5, 2), 1, zero).tolist() == [0]


def test_a_tie_reads_on_until_the_uniform_differs() -> None:
    plan = laplace_plan(Fraction(5, 2))
    top = (1 << 128) - 1
    threshold = (int(plan.high[0]) << 64) | int(plan.low[0])
    following = leading_bits(Shape.TANH, plan.gamma, 192) & ((1 << 64) - 1)
    for nxt, zero in ((following - 1, True), (following + 1, False)):
        chunks = [words([threshold, *[top] * plan.bits, top], 0), nxt.to_bytes(8, "big")]
        source = ScriptedSource(chunks)
        drawn = discrete_laplace(Fraction(5, 2), 1, source).tolist()
        assert (drawn == [0]) == zero
        assert source.requests[1:] == [8]


def test_the_far_tail_is_drawn_exactly_by_a_loop() -> None:
    """Above 2^J (probability <= 2^-64): the geometric loop reads on and the draw is large."""
    scale = Fraction(5, 2)
    plan = laplace_plan(scale)
    top = (1 << 128) - 1
    rng = np.random.default_rng(7)
    later: list[int] = []

    def source(size: int) -> bytes:
        if not later:
            later.append(size)
            return words([top, *[top] * plan.bits, 0], 0)  # every digit 0, in the tail
        later.append(size)
        return rng.bytes(size)

    (drawn,) = discrete_laplace(scale, 1, source).tolist()
    assert drawn >= 1 + (1 << plan.bits)
    assert (drawn - 1) % (1 << plan.bits) == 0
    assert len(later) > 1


def test_scales_beyond_62_bits_are_refused() -> None:
    with pytest.raises(ValueError, match="too large"):
        laplace_plan(Fraction(10**20))
