"""Perturbation: exact Bernoulli probabilities, CSPRNG by default, statistics, validation."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from deniable.client import RandomizedResponse
from deniable.shared.sampling._bernoulli import bernoulli, generator_source
from tests.shared._sources import ScriptedSource

# Statistical tests fail only when a binomial p-value is below this: one false alarm in a
# million runs of a test.
P_FLOOR = 1e-6


def word(*leading: int) -> bytes:
    """One draw's 8-byte word, big-endian: these bytes first, then zeros."""
    return bytes(leading) + bytes(8 - len(leading))


def test_single_digit_probability_is_exact_over_all_bytes() -> None:
    # (1 + 1/2)/2 = 0.75 = 0xC0/256: exactly 192 of the 256 leading bytes keep the truth.
    p = RandomizedResponse(0.5).p_truth_exact
    source = ScriptedSource([bytes(range(256))])
    result = bernoulli(p, 256, source)
    assert int(result.sum()) == 192
    assert result[:192].all()
    assert not result[192:].any()
    assert source.requests == [256]  # one byte per draw: p has one digit


@pytest.mark.parametrize(
    "p",
    [Fraction(0x8001, 1 << 16), Fraction(0x00FF, 1 << 16), Fraction(0xFE01, 1 << 16)],
)
def test_two_digit_probability_is_exact_over_all_byte_pairs(p: Fraction) -> None:
    # Enumerate every (first, second) byte pair once: the count of successes must be
    # exactly p * 65536, so the sampler's probability is p with no rounding at all. Every
    # draw reads both bytes, in one call, whether its first byte ties with p's or not.
    source = ScriptedSource([b"".join(i.to_bytes(2, "big") for i in range(65536))])
    result = bernoulli(p, 65536, source)
    assert int(result.sum()) == p * 65536
    assert result[: p.numerator].all()
    assert not result[p.numerator :].any()
    assert source.requests == [2 * 65536]


def test_alpha_point_one_has_many_digits_and_reads_them_all() -> None:
    p = RandomizedResponse(0.1).p_truth_exact
    assert p == Fraction(11, 20) + (Fraction(0.1) - Fraction(1, 10)) / 2
    # Bytes equal to every digit of p: U = p exactly is not < p.
    exponent = p.denominator.bit_length() - 1
    places = -(-exponent // 8)
    assert places == 7
    scaled = p.numerator << (8 * places - exponent)
    digits = [(scaled >> (8 * (places - 1 - i))) & 0xFF for i in range(places)]
    source = ScriptedSource([word(*digits)])
    assert not bernoulli(p, 1, source)[0]
    assert source.requests == [8]
    below = [*digits[:-1], digits[-1] - 1]  # last digit smaller: U < p
    assert bernoulli(p, 1, ScriptedSource([word(*below)]))[0]
    source = ScriptedSource([word(digits[0] + 1)])  # decided by the first byte, all read
    assert not bernoulli(p, 1, source)[0]
    assert source.requests == [8]


def test_probabilities_of_more_than_eight_digits_compare_word_by_word() -> None:
    p = Fraction(0x0102030405060708090A, 1 << 80)  # ten digits: two words per draw
    high = bytes(range(1, 9))
    cases = [(high + word(9, 9), True), (high + word(9, 10), False), (high + word(9, 11), False)]
    for chunk, expected in cases:
        source = ScriptedSource([chunk])
        assert bool(bernoulli(p, 1, source)[0]) is expected
        assert source.requests == [16]


def test_certain_and_impossible_events_use_no_randomness() -> None:
    def refuse(size: int) -> bytes:
        raise AssertionError("no randomness should be drawn")

    assert bernoulli(Fraction(1), 5, refuse).all()
    assert not bernoulli(Fraction(0), 5, refuse).any()
    truth = np.array([True, False, True])
    assert (RandomizedResponse(1.0).perturb_many(truth) == truth).all()


def test_bernoulli_rejects_non_dyadic_and_out_of_range() -> None:
    with pytest.raises(ValueError, match="not a dyadic rational"):
        bernoulli(Fraction(1, 3), 1, os.urandom)
    with pytest.raises(ValueError, match="probability must be in"):
        bernoulli(Fraction(3, 2), 1, os.urandom)


def test_default_randomness_is_the_os_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    fill = {"byte": b"\x00"}

    def fake_urandom(size: int) -> bytes:
        calls.append(size)
        return fill["byte"] * size

    monkeypatch.setattr(os, "urandom", fake_urandom)
    rr = RandomizedResponse(0.5)
    truth = np.array([True, False, True, False, False])
    # Byte 0x00 < 0xC0: every report keeps the truth.
    assert (rr.perturb_many(truth) == truth).all()
    assert calls == [5]  # one byte per report: (1 + 1/2)/2 = 0xC0/256
    # Byte 0xFF > 0xC0: every report is the opposite; the output follows the OS bytes.
    fill["byte"] = b"\xff"
    assert (rr.perturb_many(truth) == ~truth).all()
    assert rr.perturb(True) is False
    assert calls == [5, 5, 1]


def test_seeded_generator_is_used_only_when_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_urandom(size: int) -> bytes:
        raise AssertionError("a seeded run must not read the OS source")

    monkeypatch.setattr(os, "urandom", no_urandom)
    rr = RandomizedResponse(0.5)
    truth = np.ones(1000, dtype=bool)
    first = rr.perturb_many(truth, rng=np.random.default_rng(7))
    again = rr.perturb_many(truth, rng=np.random.default_rng(7))
    assert (first == again).all()
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator, got int"):
        rr.perturb_many(truth, rng=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        generator_source(np.random.RandomState(1))  # type: ignore[arg-type]


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("truth", [True, False])
@pytest.mark.parametrize("source", ["os", "seeded"])
def test_reports_keep_the_truth_with_probability_one_plus_alpha_over_two(
    alpha: float, truth: bool, source: str
) -> None:
    n = 400_000
    rr = RandomizedResponse(alpha)
    rng = np.random.default_rng(20261121) if source == "seeded" else None
    reports = rr.perturb_many(np.full(n, truth), rng=rng)
    kept = int(np.count_nonzero(reports == truth))
    assert stats.binomtest(kept, n, rr.p_truth).pvalue > P_FLOOR


def test_reports_are_independent_of_position_and_of_each_other() -> None:
    # Alternating truths: the keep rate is the same for even and odd positions, and the
    # keep decisions of neighbours are uncorrelated (2x2 table, Fisher's exact test).
    rr = RandomizedResponse(0.5)
    truth = np.arange(200_000) % 2 == 0
    kept = rr.perturb_many(truth) == truth
    for part in (kept[0::2], kept[1::2]):
        assert stats.binomtest(int(part.sum()), part.size, rr.p_truth).pvalue > P_FLOOR
    pairs = kept[:-1:2].astype(int) * 2 + kept[1::2].astype(int)
    table = np.bincount(pairs, minlength=4).reshape(2, 2)
    assert stats.fisher_exact(table).pvalue > P_FLOOR


def test_shape_is_preserved_and_integers_are_accepted() -> None:
    rr = RandomizedResponse(0.5)
    out = rr.perturb_many(np.ones((3, 4), dtype=np.int8))
    assert out.shape == (3, 4)
    assert out.dtype == np.bool_
    assert rr.perturb_many([]).shape == (0,)
    assert isinstance(rr.perturb(1), bool)
    assert isinstance(rr.perturb(np.bool_(False)), bool)


@pytest.mark.parametrize(
    ("bits", "error", "message"),
    [
        ([0, 2], ValueError, r"bits must be 0 or 1, got 2 at index \(1,\)"),
        ([[0, 1], [-1, 0]], ValueError, r"bits must be 0 or 1, got -1 at index \(1, 0\)"),
        ([0.5], TypeError, "bits must be booleans or 0/1 integers, got dtype float64"),
        (["yes"], TypeError, "bits must be booleans or 0/1 integers, got dtype <U3"),
    ],
)
def test_invalid_bits_are_rejected_naming_the_value(
    bits: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RandomizedResponse(0.5).perturb_many(bits)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bit", "error", "message"),
    [
        (2, ValueError, "bit must be 0 or 1, got 2"),
        (0.0, TypeError, "bit must be booleans or 0/1 integers, got dtype float64"),
        ([1, 0], ValueError, r"bit must be a single answer, got shape \(2,\)"),
    ],
)
def test_invalid_single_bit_is_rejected(bit: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        RandomizedResponse(0.5).perturb(bit)  # type: ignore[arg-type]


def test_client_mechanism_shares_the_spec_validation_and_epsilon() -> None:
    rr = RandomizedResponse.from_epsilon(1.0)
    assert isinstance(rr, RandomizedResponse)
    assert rr.epsilon == 1.0
    assert rr.epsilon_approx == 2 * rr.alpha
    with pytest.raises(ValueError, match="alpha must be in"):
        RandomizedResponse(alpha=1.2)
