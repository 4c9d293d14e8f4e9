"""Exact numeric sampling: rational and exp(−γ) Bernoullis, discrete Laplace, mechanisms."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import deniable.shared.sampling._dlaplace as dl
from deniable.shared._exact import exp_at_least
from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    NumericMechanism,
    PiecewiseMechanism,
)
from deniable.shared.mechanisms._numeric_sampling import exact_positions, stochastic_round
from deniable.shared.questions import numeric_mechanism
from deniable.shared.sampling._bernoulli import generator_source, os_source
from deniable.shared.sampling._discrete_laplace import discrete_laplace
from deniable.shared.sampling._dlaplace import (
    bernoulli_exp,
    bernoulli_rational,
    geometric_exp,
    uniform_below,
)
from tests.shared._sources import ScriptedSource

# Statistical tests fail only when a p-value is below this, or a statistic is beyond
# four standard errors.
P_FLOOR = 1e-6
Z_MAX = 4.0
KINDS = ("laplace", "duchi", "piecewise", "hybrid")


def seeded(seed: int) -> Callable[[int], bytes]:
    return generator_source(np.random.default_rng(seed))


def word(value: int) -> bytes:
    """One 64-bit word as the samplers read it (little-endian)."""
    return np.array([value], dtype="<u8").tobytes()


def refuse(size: int) -> bytes:
    raise AssertionError("no randomness should be drawn")


# --- rational Bernoulli: exact at the digit boundary -------------------------------------


def test_rational_bernoulli_decides_exactly_at_the_boundary() -> None:
    # p = 1/3 has base-2^64 digits d, d, d, ... with d = floor(2^64/3): a float comparison
    # cannot tell U just below p from U just above it; the digit comparison can.
    digit = (1 << 64) // 3
    assert bernoulli_rational([1], 3, ScriptedSource([word(digit - 1)]))[0]
    assert not bernoulli_rational([1], 3, ScriptedSource([word(digit + 1)]))[0]
    tie = ScriptedSource([word(digit), word(digit), word(digit - 1)])
    assert bernoulli_rational([1], 3, tie)[0]  # U = 0.ddd(d−1)... < 1/3
    assert tie.requests == [8, 8, 8]
    tie_then_above = ScriptedSource([word(digit), word(digit + 1)])
    assert not bernoulli_rational([1], 3, tie_then_above)[0]
    # The shared-numerator path decides the same way.
    assert bernoulli_rational(1, 3, ScriptedSource([word(digit), word(digit - 1)]), 1)[0]


def test_rational_bernoulli_with_terminating_expansion_is_false_on_a_full_tie() -> None:
    # p = 1/4: digit 2^62 and nothing after it, so U = p exactly is not < p.
    source = ScriptedSource([word(1 << 62)])
    assert not bernoulli_rational([1], 4, source)[0]
    assert source.requests == [8]


def test_rational_bernoulli_certain_events_draw_nothing_and_bad_input_raises() -> None:
    assert bernoulli_rational([0, 5, 5, 0], 5, refuse).tolist() == [False, True, True, False]
    assert bernoulli_rational(7, 7, refuse, 3).all()
    assert not bernoulli_rational(0, 7, refuse, 3).any()
    with pytest.raises(ValueError, match=r"probability must be in \[0, 1\], got 6/5"):
        bernoulli_rational([1, 6], 5, os_source)
    with pytest.raises(ValueError, match="denominator must be positive, got 0"):
        bernoulli_rational([0], 0, os_source)


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(2, 7), Fraction(999_999, 1_000_000)])
def test_rational_bernoulli_frequency(p: Fraction) -> None:
    n = 200_000
    draws = bernoulli_rational([p.numerator] * n, p.denominator, seeded(1))
    assert stats.binomtest(int(draws.sum()), n, float(p)).pvalue > P_FLOOR


def test_uniform_below_is_uniform_and_exact_for_powers_of_two() -> None:
    draws = uniform_below(7, 140_000, seeded(2))
    counts = np.bincount(draws, minlength=7)
    assert counts.size == 7
    assert stats.chisquare(counts).pvalue > P_FLOOR
    # bound 8 keeps the low 3 bits of one byte per draw: no rejection.
    source = ScriptedSource([bytes([0x07, 0xF8])])
    assert uniform_below(8, 2, source).tolist() == [7, 0]
    assert source.requests == [2]
    assert uniform_below(1, 4, refuse).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="bound must be in"):
        uniform_below(0, 1, os_source)


# --- Bernoulli(exp(−γ)): every path of the algorithm, exactly ------------------------------


class _NeedBranchError(Exception):
    def __init__(self, probability: Fraction) -> None:
        self.probability = probability


def _path_probabilities(
    sampler: Callable[[Fraction], bool], gamma: Fraction, depth: int
) -> tuple[Fraction, Fraction]:
    """(P(True), P(any)) over all paths of a sampler with at most ``depth`` coin flips.

    The rational Bernoulli is replaced by a scripted one, so each path's probability is
    the product of the exact probabilities the algorithm asks for.
    """
    true_mass = Fraction(0)
    total = Fraction(0)
    stack: list[list[tuple[bool, Fraction]]] = [[]]
    original = dl.bernoulli_rational
    while stack:
        prefix = stack.pop()
        replay = iter(prefix)

        def scripted(
            nums: list[int] | int,
            den: int,
            source: object,
            size: int | None = None,
            replay: Iterator[tuple[bool, Fraction]] = replay,
        ) -> np.ndarray:
            if isinstance(nums, int):
                assert size == 1
                asked = Fraction(nums, den)
            else:
                assert len(nums) == 1
                asked = Fraction(nums[0], den)
            try:
                outcome, probability = next(replay)
            except StopIteration:
                raise _NeedBranchError(asked) from None
            assert probability == asked
            return np.array([outcome])

        dl.bernoulli_rational = scripted  # type: ignore[assignment]
        try:
            result = sampler(gamma)
        except _NeedBranchError as branch:
            if len(prefix) < depth:
                p = branch.probability
                stack.append([*prefix, (True, p)])
                stack.append([*prefix, (False, p)])
            continue
        finally:
            dl.bernoulli_rational = original
        mass = math.prod((p if o else 1 - p for o, p in prefix), start=Fraction(1))
        total += mass
        true_mass += mass if result else 0
    return true_mass, total


def _per_element(gamma: Fraction) -> bool:
    return bool(bernoulli_exp([gamma.numerator], gamma.denominator, refuse)[0])


def _shared(gamma: Fraction) -> bool:
    return bool(dl._bernoulli_exp_same(gamma, 1, refuse)[0])


@pytest.mark.parametrize("sampler", [_per_element, _shared])
@pytest.mark.parametrize("gamma", [0.375, 1.0, 1.25, 2.5])
def test_exp_bernoulli_is_exact_path_by_path(
    sampler: Callable[[Fraction], bool], gamma: float
) -> None:
    # Summing the exact path probabilities brackets P(True) within the unexplored mass,
    # and the bracket must contain e^−γ: checked with exact decimal exponentials.
    true_mass, total = _path_probabilities(sampler, Fraction(gamma), depth=24)
    missing = 1 - total
    assert missing < Fraction(1, 10**9)
    assert not exp_at_least(gamma, 1 / true_mass)  # e^−γ > P(True, explored)
    assert exp_at_least(gamma, 1 / (true_mass + missing))  # e^−γ <= P(True) bound


def test_exp_bernoulli_of_zero_is_certain_and_draws_nothing() -> None:
    assert bernoulli_exp([0, 0, 0], 5, refuse).all()
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        bernoulli_exp([-1], 5, os_source)


@pytest.mark.parametrize("gamma", [Fraction(1, 3), Fraction(1), Fraction(17, 7)])
def test_exp_bernoulli_frequency(gamma: Fraction) -> None:
    n = 200_000
    draws = bernoulli_exp([gamma.numerator] * n, gamma.denominator, seeded(3))
    assert stats.binomtest(int(draws.sum()), n, math.exp(-gamma)).pvalue > P_FLOOR


def test_geometric_matches_its_pmf() -> None:
    gamma = Fraction(3, 5)
    draws = geometric_exp(gamma, 100_000, seeded(4))
    top = 12
    counts = np.bincount(np.minimum(draws, top), minlength=top + 1)
    q = math.exp(-gamma)
    pmf = [(1 - q) * q**v for v in range(top)] + [q**top]
    assert stats.chisquare(counts, np.array(pmf) * draws.size).pvalue > P_FLOOR


# --- discrete Laplace: chi-square against the pmf -----------------------------------------


@pytest.mark.parametrize(
    "scale", [Fraction(1, 3), Fraction(5, 2), Fraction(1024, 1), Fraction(10**6, 7)]
)
def test_discrete_laplace_matches_its_pmf(scale: Fraction) -> None:
    n = 100_000
    draws = discrete_laplace(scale, n, seeded(5))
    law = stats.dlaplace(float(1 / scale))
    # Bins with expected count >= 50: cut points at quantiles, tails included.
    edges = np.unique(law.ppf(np.linspace(0, 1, 41)[1:-1]))
    bins = np.concatenate([[-np.inf], edges, [np.inf]])
    expected = np.diff(law.cdf(bins)) * n
    counts = np.histogram(draws, bins=np.concatenate([[-np.inf], edges + 0.5, [np.inf]]))[0]
    assert expected.min() > 50
    assert stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue > P_FLOOR
    assert np.abs(draws.mean()) < Z_MAX * math.sqrt(law.var() / n)


def test_discrete_laplace_rejects_bad_scale() -> None:
    with pytest.raises(ValueError, match="scale must be > 0"):
        discrete_laplace(Fraction(0), 1, os_source)


# --- exact input positions and stochastic rounding ----------------------------------------


def test_positions_are_exact_rationals() -> None:
    nums, den = exact_positions([0.1, -3.0, 7.0], -3.0, 7.0)
    assert [Fraction(n, den) for n in nums] == [(Fraction(0.1) + 3) / 10, 0, 1]


def test_stochastic_rounding_asks_for_the_exact_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Fraction] = []

    def record(nums: list[int], den: int, source: object, *, fixed_reads: bool) -> np.ndarray:
        assert fixed_reads  # read whatever the fraction: the true values are secret
        asked.extend(Fraction(n, den) for n in nums)
        return np.zeros(len(nums), dtype=bool)

    monkeypatch.setattr("deniable.shared.mechanisms._numeric_sampling.bernoulli_rational", record)
    nums, den = exact_positions([0.1, 1.0, 0.5], 0.0, 1.0)
    floors = stochastic_round(nums, den, 3, os_source)
    assert floors.tolist() == [0, 3, 1]
    assert asked == [Fraction(0.1) * 3, 0, Fraction(1, 2)]


# --- mechanisms: unbiased, variance as computed, reports on the grid ----------------------

LO, HI = -3.0, 7.0
XS = [LO, -0.5, 0.1, 4.0, HI]  # t = −1, −0.5, −0.38, 0.4, 1 (0.1 is not dyadic)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
@pytest.mark.parametrize("kind", KINDS)
def test_mechanisms_are_unbiased_with_the_stated_variance(kind: str, epsilon: float) -> None:
    n = 100_000
    mech = numeric_mechanism(kind, LO, HI, epsilon)
    rng = np.random.default_rng([KINDS.index(kind), int(epsilon)])
    for x in XS:
        reports = mech.perturb_many(np.full(n, x), rng=rng)
        assert mech.validate_report(reports) is None
        t = mech.normalize(x)
        variance = mech.variance(t)
        mean_z = (reports.mean() - t) / math.sqrt(variance / n)
        assert abs(mean_z) < Z_MAX, (x, mean_z)
        # Var of the sample variance is (μ4 − σ⁴)/n.
        centred = reports - t
        mu4 = float(np.mean(centred**4))
        var_z = (reports.var() - variance) / math.sqrt((mu4 - variance**2) / n)
        assert abs(var_z) < Z_MAX, (x, var_z)


@pytest.mark.parametrize("kind", KINDS)
def test_worst_variance_is_attained_at_an_endpoint_or_bounds_every_t(kind: str) -> None:
    spec = numeric_mechanism(kind, LO, HI, 2.0)
    ts = np.linspace(-1, 1, 2001)
    slack = 1 + 1e-12  # float rounding of the sums below
    assert max(spec.variance(float(t)) for t in ts) <= spec.worst_variance * slack
    # Worst inputs: t = ±1 (Piecewise, Hybrid), t = 0 (Duchi), a half-step off the
    # input grid (Laplace, grid_bits = 10).
    best = max(spec.variance(t) for t in (-1.0, 0.0, 1.0, -1 + 2**-10))
    assert best == pytest.approx(spec.worst_variance, rel=1e-9)
    assert max(spec.variance(float(t)) + t * t for t in ts) <= spec.worst_second_moment * slack
    assert spec.variance(1.0) + 1 == pytest.approx(spec.worst_second_moment, rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_privacy_audit_on_the_extreme_event(kind: str) -> None:
    # One-sided Clopper–Pearson bounds on P(S | hi) and P(S | lo) for the
    # maximal-ratio event S; the certified ratio must not be beaten.
    n = 50_000
    spec = numeric_mechanism(kind, 0.0, 1.0, 1.0)
    rng = np.random.default_rng(99)
    # S = {y >= 1}: y > hi (Laplace), y = +B (Duchi), y in [1, C] (Piecewise, Hybrid).
    high = int((spec.perturb_many(np.ones(n), rng) >= 1.0).sum())
    low = int((spec.perturb_many(np.zeros(n), rng) >= 1.0).sum())
    level = 1 - 1e-6
    p_high = stats.binomtest(high, n).proportion_ci(level, "exact").low
    p_low = stats.binomtest(low, n).proportion_ci(level, "exact").high
    assert math.log(p_high / p_low) <= spec.epsilon


# --- exactness of every small discretized Piecewise / Hybrid by enumeration ---------------


def _pm_output_pmf(spec: PiecewiseMechanism, t: Fraction) -> dict[int, Fraction]:
    h, w, ell, cells = spec.half_step, spec.center_cells, spec.outer_cells, spec.cells
    high = (h * w + 1) / (w * h * cells)
    low = (h * ell - 1) / (ell * h * cells)
    position = (t + 1) * ell / 2
    k0 = math.floor(position)
    frac = position - k0
    pmf: dict[int, Fraction] = {}
    for k, weight in ((k0, 1 - frac), (k0 + 1, frac)):
        if weight:
            for i in range(cells):
                pmf[i] = pmf.get(i, Fraction(0)) + weight * (high if k <= i < k + w else low)
    return pmf


@pytest.mark.parametrize(("center", "outer", "bits"), [(3, 7, 1), (1, 3, 0), (5, 2, 0), (4, 9, 2)])
def test_small_piecewise_is_exactly_unbiased_with_exact_epsilon(
    center: int, outer: int, bits: int
) -> None:
    spec = PiecewiseMechanism(0.0, 1.0, center, outer, bits)
    ts = sorted({Fraction(2 * k, outer) - 1 for k in range(outer + 1)} | {Fraction(1, 3)})
    pmfs = {t: _pm_output_pmf(spec, t) for t in ts}
    for t, pmf in pmfs.items():
        ys = {i: (2 * i + 1 - spec.cells) * spec.half_step for i in pmf}
        assert sum(pmf.values()) == 1
        mean = sum(p * ys[i] for i, p in pmf.items())
        assert mean == t
        assert sum(p * ys[i] ** 2 for i, p in pmf.items()) - t * t == spec.variance_exact(t)
    worst = max(pmfs[a][i] / pmfs[b][i] for a in ts for b in ts for i in pmfs[a])
    assert worst == spec.privacy_ratio
    assert spec.certifies(spec.epsilon)
    assert not spec.certifies(math.nextafter(spec.epsilon, 0.0))


def test_small_hybrid_ratio_is_the_larger_part() -> None:
    pm = PiecewiseMechanism(0.0, 1.0, 3, 7, 1)  # reports are odd multiples of 1/2
    spec = HybridMechanism(0.0, 1.0, beta=0.25, bound=2.25, center_cells=3, outer_cells=7,
                           grid_bits=1)  # fmt: skip
    duchi = spec.duchi
    ts = [Fraction(2 * k, 7) - 1 for k in range(8)]

    def pmf(t: Fraction) -> dict[object, Fraction]:
        out: dict[object, Fraction] = {
            i: Fraction(1, 4) * p for i, p in _pm_output_pmf(pm, t).items()
        }
        plus = Fraction(1, 2) + t / (2 * Fraction(duchi.bound))
        out["+B"], out["-B"] = Fraction(3, 4) * plus, Fraction(3, 4) * (1 - plus)
        return out

    pmfs = {t: pmf(t) for t in ts}
    worst = max(pmfs[a][y] / pmfs[b][y] for a in ts for b in ts for y in pmfs[a])
    assert worst == max(pm.privacy_ratio, duchi.privacy_ratio) == spec.privacy_ratio


# --- grid, clamping, randomness source, shapes --------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_values_outside_the_range_raise_unless_clamped(kind: str) -> None:
    mech = numeric_mechanism(kind, 0.0, 10.0, 1.0)
    with pytest.raises(ValueError, match=r"value 11\.0 at index 1 is outside \[0\.0, 10\.0\]"):
        mech.perturb_many([5.0, 11.0])
    with pytest.raises(ValueError, match=r"value -0\.5 at index 0 is outside"):
        mech.perturb(-0.5)
    clamped = mech.perturb_many([11.0, -4.0], rng=np.random.default_rng(8), clamp=True)
    edges = mech.perturb_many([10.0, 0.0], rng=np.random.default_rng(8))
    assert clamped.tolist() == edges.tolist()
    with pytest.raises(ValueError, match=r"values must be finite, got nan at index 2"):
        mech.perturb_many([1.0, 2.0, math.nan], clamp=True)
    with pytest.raises(ValueError, match="values must be finite, got inf"):
        mech.perturb(math.inf, clamp=True)
    with pytest.raises(TypeError, match="values must be real numbers, got dtype <U3"):
        mech.perturb_many(["one"])
    with pytest.raises(TypeError, match="values must be real numbers, got dtype bool"):
        mech.perturb_many([True])


@pytest.mark.parametrize("kind", KINDS)
def test_shapes_and_types(kind: str) -> None:
    mech = numeric_mechanism(kind, 0.0, 1.0, 2.0)
    out = mech.perturb_many(np.full((3, 4), 0.5))
    assert out.shape == (3, 4)
    assert out.dtype == np.float64
    assert mech.perturb_many([]).shape == (0,)
    assert isinstance(mech.perturb(1), float)
    assert mech.perturb_many(np.array([0, 1], dtype=np.int8)).shape == (2,)
    with pytest.raises(ValueError, match=r"value must be a single number, got shape \(2,\)"):
        mech.perturb([0.1, 0.2])  # type: ignore[arg-type]


def test_mechanism_types_follow_their_names() -> None:
    for kind, cls in [
        ("laplace", LaplaceMechanism),
        ("duchi", DuchiMechanism),
        ("piecewise", PiecewiseMechanism),
        ("hybrid", HybridMechanism),
    ]:
        mech = numeric_mechanism(kind, 0.0, 1.0, 1.0)
        assert type(mech) is cls
        assert mech.describe()["mechanism"] == kind
    with pytest.raises(ValueError, match="unknown kind 'grr' of a numeric question"):
        numeric_mechanism("grr", 0.0, 1.0, 1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_default_randomness_is_the_os_csprng(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec: NumericMechanism = numeric_mechanism(kind, 0.0, 1.0, 1.0)
    calls: list[int] = []
    real = os.urandom

    def counting(size: int) -> bytes:
        calls.append(size)
        return real(size)

    monkeypatch.setattr(os, "urandom", counting)
    spec.perturb_many([0.25, 0.75])
    assert calls

    def no_urandom(size: int) -> bytes:
        raise AssertionError("a seeded run must not read the OS source")

    monkeypatch.setattr(os, "urandom", no_urandom)
    first = spec.perturb_many(np.linspace(0, 1, 500), np.random.default_rng(3))
    again = spec.perturb_many(np.linspace(0, 1, 500), np.random.default_rng(3))
    assert first.tolist() == again.tolist()
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator, got int"):
        spec.perturb_many([0.5], 7)  # type: ignore[arg-type]
