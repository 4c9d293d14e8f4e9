"""Numeric mechanisms (ε pinned, worst-variance table, validation, grids) and mean estimation."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    NumericMechanism,
    PiecewiseMechanism,
    mechanism_of,
)
from deniable.shared.mechanisms._mean import MeanTally, estimate_mean, estimate_mean_from_reports
from deniable.shared.mechanisms._mean_intervals import t_interval
from deniable.shared.questions import NUMERIC, numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

KINDS = ("laplace", "duchi", "piecewise", "hybrid")

# Worst-case per-report variance on the [−1, 1] scale of the continuous mechanisms
# (Duchi et al., JASA 2018; Wang et al., ICDE 2019): docs/mechanisms.md's table.
TABLE = {
    0.5: {"laplace": "32.0", "duchi": "16.67", "piecewise": "21.22", "hybrid": "16.67"},
    1.0: {"laplace": "8.0", "duchi": "4.683", "piecewise": "5.224", "hybrid": "4.289"},
    2.0: {"laplace": "2.0", "duchi": "1.724", "piecewise": "1.228", "hybrid": "1.042"},
    4.0: {"laplace": "0.500", "duchi": "1.076", "piecewise": "0.241", "hybrid": "0.219"},
}


def rounded_like(value: float, printed: str) -> float:
    """``value`` rounded to as many significant digits as ``printed`` shows."""
    digits = len(printed.replace(".", "").lstrip("0"))
    return float(f"{value:.{digits - 1}e}")


# --- the worst-variance table and the automatic choice------------------------------------


@pytest.mark.parametrize("epsilon", sorted(TABLE))
@pytest.mark.parametrize("kind", KINDS)
def test_worst_variance_matches_the_design_table(kind: str, epsilon: float) -> None:
    spec = numeric_mechanism(kind, 0.0, 1.0, epsilon)
    printed = TABLE[epsilon][kind]
    assert rounded_like(spec.worst_variance, printed) == float(printed)


def test_continuous_formulas_are_matched_closely() -> None:
    for epsilon in (0.5, 1.0, 2.0, 4.0, 8.0):
        a = math.exp(epsilon / 2)
        duchi = ((math.exp(epsilon) + 1) / (math.exp(epsilon) - 1)) ** 2
        piecewise = 4 * a / (3 * (a - 1) ** 2)
        # Laplace: 8/ε² plus the grid's 1/(3·4^m) + ε²/(30·16^m) + O(ε⁴/64^m), m = 10.
        laplace = numeric_mechanism("laplace", 0.0, 1.0, epsilon).worst_variance
        grid = 1 / (3 * 4**10) + epsilon**2 / (30 * 16**10)
        assert laplace == pytest.approx(8 / epsilon**2 + grid, rel=1e-13)
        assert numeric_mechanism("duchi", 0.0, 1.0, epsilon).worst_variance == pytest.approx(
            duchi, rel=1e-14
        )
        # Piecewise: the grid trades about 1e-6 of ε for exactness.
        assert numeric_mechanism("piecewise", 0.0, 1.0, epsilon).worst_variance == pytest.approx(
            piecewise, rel=2e-6
        )


@pytest.mark.parametrize("epsilon", [*sorted(TABLE), 0.1, 0.61, 0.62, 8.0])
def test_auto_picks_the_lowest_worst_case_variance(epsilon: float) -> None:
    chosen = numeric_mechanism("auto", 0.0, 1.0, epsilon)
    spec = {k: numeric_mechanism(k, 0.0, 1.0, epsilon) for k in KINDS}
    worst_population = {k: m.estimate_variance(1) for k, m in spec.items()}
    # The mean's variance for the worst population: Duchi's E[y² | t] = B² for every t.
    assert chosen.name == "duchi"  # ties (Hybrid with β = 0) go to Duchi
    assert chosen.estimate_variance(1) == min(worst_population.values())
    # Given one true value, Hybrid has the least worst-case variance (Wang et al. 2019),
    # but its E[y² | t] grows to Var + 1 at t = ±1, so a population there costs it more.
    conditional = {k: m.worst_variance for k, m in spec.items()}
    if epsilon <= 0.61:
        assert conditional["hybrid"] == conditional["duchi"]
        assert worst_population["hybrid"] == worst_population["duchi"]
    else:
        assert conditional["hybrid"] < min(conditional["duchi"], conditional["piecewise"])
        assert worst_population["hybrid"] > worst_population["duchi"]


def test_hybrid_beta_follows_the_icde_rule() -> None:
    assert HybridMechanism.from_epsilon(0.0, 1.0, 1.0).beta == -math.expm1(-0.5)
    assert HybridMechanism.from_epsilon(0.0, 1.0, 0.61).beta == 0.0


# --- ε pinned from both sides ------------------------------------------------------------


def assert_pinned(spec: NumericMechanism, requested: float) -> None:
    assert spec.certifies(spec.epsilon)
    assert not spec.certifies(math.nextafter(spec.epsilon, 0.0))
    assert spec.certifies(requested)
    assert spec.epsilon <= requested


@pytest.mark.parametrize("epsilon", [2.0**-20, 0.1, 0.5, 1.0, math.log(3), 2.0, 4.0, 10.0, 50.0])
@pytest.mark.parametrize("kind", KINDS)
def test_epsilon_is_pinned_from_both_sides(kind: str, epsilon: float) -> None:
    spec = numeric_mechanism(kind, -1.0, 1.0, epsilon)
    assert_pinned(spec, epsilon)
    if kind == "laplace":
        assert spec.epsilon == epsilon  # the privacy loss is ε itself
    elif kind != "duchi" or epsilon < 30:  # B = 1 + 2^-52 caps Duchi near ε = 36.7
        assert spec.epsilon == pytest.approx(epsilon, rel=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=2.0**-20, max_value=50.0), st.sampled_from(KINDS))
def test_any_epsilon_is_certified_at_the_request(epsilon: float, kind: str) -> None:
    assert_pinned(numeric_mechanism(kind, 0.0, 1.0, epsilon), epsilon)


def test_duchi_epsilon_is_exact_for_a_round_bound() -> None:
    spec = DuchiMechanism(0.0, 1.0, bound=2.0)  # ratio 3: ε = ln 3
    assert spec.privacy_ratio == 3
    assert spec.epsilon == math.log(3)
    assert spec.certifies(math.log(3))
    assert not spec.certifies(math.log(2.999))
    assert spec.p_max_exact == Fraction(3, 4)


def test_duchi_bound_is_the_smallest_certified_float() -> None:
    spec = DuchiMechanism.from_epsilon(0.0, 1.0, 1.0)
    below = DuchiMechanism(0.0, 1.0, bound=math.nextafter(spec.bound, 1.0))
    assert spec.certifies(1.0)
    assert not below.certifies(1.0)


def test_piecewise_grid_is_the_tightest_certified() -> None:
    spec = PiecewiseMechanism.from_epsilon(0.0, 1.0, 1.0)
    w, ell, g = spec.center_cells, spec.outer_cells, spec.grid_bits
    assert not PiecewiseMechanism(0.0, 1.0, w - 1, ell, g).certifies(1.0)
    assert not PiecewiseMechanism(0.0, 1.0, w, ell - 1, g).certifies(1.0)
    assert spec.center_cells > 500_000  # fine grid: ε within ~1e-6 of the request


def test_hybrid_epsilon_is_the_larger_part_in_use() -> None:
    spec = HybridMechanism.from_epsilon(0.0, 1.0, 2.0)
    parts = [spec.piecewise.epsilon, spec.duchi.epsilon]
    assert spec.epsilon == max(parts)
    only_duchi = HybridMechanism(0.0, 1.0, 0.0, 3.0, 1, 3, 0)  # Piecewise part has ratio 3
    assert only_duchi.piecewise.privacy_ratio == 3
    assert only_duchi.privacy_ratio == 2
    only_pm = HybridMechanism(0.0, 1.0, 1.0, 3.0, 1, 3, 0)
    assert only_pm.privacy_ratio == 3


# --- validation --------------------------------------------------------------------------


INVALID: list[tuple[Any, tuple[Any, ...], type[Exception], str]] = [
    (LaplaceMechanism, (1.0, 1.0, 1.0), ValueError, r"lo must be < hi, got lo=1\.0, hi=1\.0"),
    (LaplaceMechanism, (2.0, 1.0, 1.0), ValueError, r"lo must be < hi, got lo=2\.0"),
    (LaplaceMechanism, (math.nan, 1.0, 1.0), ValueError, "lo must be a finite number, got nan"),
    (DuchiMechanism, (0.0, math.inf, 2.0), ValueError, "hi must be a finite number, got inf"),
    (LaplaceMechanism, (-1e308, 1e308, 1.0), ValueError, "hi - lo must be a finite float"),
    (LaplaceMechanism, (True, 2.0, 1.0), TypeError, "lo must be a real number, got True"),
    (LaplaceMechanism, (0.0, 1.0, 0.0), ValueError, r"epsilon must be in \[2\^-20, 50\].*got 0\.0"),
    (LaplaceMechanism, (0.0, 1.0, math.nan), ValueError, "epsilon must be in .* got nan"),
    (LaplaceMechanism, (0.0, 1.0, math.inf), ValueError, "epsilon must be in .* got inf"),
    (LaplaceMechanism, (0.0, 1.0, 51.0), ValueError, r"epsilon must be in .* got 51\.0"),
    (LaplaceMechanism, (0.0, 1.0, "1"), TypeError, "epsilon must be a real number, got '1'"),
    (LaplaceMechanism, (0.0, 1.0, 1.0, 0), ValueError, "grid_bits must be >= 1, got 0"),
    (LaplaceMechanism, (0.0, 1.0, 1.0, 31), ValueError, "grid_bits must be <= 30, got 31"),
    (LaplaceMechanism, (0.0, 1.0, 1.0, 2.5), TypeError, r"grid_bits must be an integer, got 2\.5"),
    (DuchiMechanism, (0.0, 1.0, 1.0), ValueError, r"bound must be > 1, got 1\.0"),
    (DuchiMechanism, (0.0, 1.0, math.nan), ValueError, "bound must be a finite number, got nan"),
    (PiecewiseMechanism, (0.0, 1.0, 0, 3, 0), ValueError, "center_cells must be >= 1, got 0"),
    (
        PiecewiseMechanism,
        (0.0, 1.0, 1, 1, 0),
        ValueError,
        r"outer_cells \* 2\^-grid_bits must be > 1",
    ),
    (PiecewiseMechanism, (0.0, 1.0, 1, 3, 65), ValueError, "grid_bits must be an integer in .* 65"),
    (PiecewiseMechanism, (0.0, 1.0, 2**52, 3, 0), ValueError, r"center_cells \+ outer_cells must"),
    (
        HybridMechanism,
        (0.0, 1.0, 1.5, 3.0, 1, 3, 0),
        ValueError,
        r"beta must be in \[0, 1\], got 1\.5",
    ),
    (
        HybridMechanism,
        (0.0, 1.0, 0.5, 1.5, 1, 3, 1),
        ValueError,
        r"bound 1\.5 lies on the piecewise",
    ),
    (
        numeric_mechanism,
        ("gauss", 0.0, 1.0, 1.0),
        ValueError,
        "unknown kind 'gauss' of a numeric question",
    ),
    (numeric_mechanism, ("duchi", 0.0, 1.0, -1.0), ValueError, r"epsilon must be in .* got -1\.0"),
]


@pytest.mark.parametrize(("build", "args", "error", "message"), INVALID)
def test_invalid_specs_raise_naming_the_value(
    build: Any, args: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build(*args)


def test_hybrid_from_epsilon_moves_the_bound_off_the_grid() -> None:
    # At ε = ln(7/3) the smallest certified Duchi bound is exactly 2.5, which lies on that
    # ε's Piecewise grid (N odd: even multiples of h); Hybrid takes the next float up.
    epsilon = math.log(3.5 / 1.5)
    bound = DuchiMechanism.from_epsilon(0.0, 1.0, epsilon).bound
    assert bound == 2.5
    spec = HybridMechanism.from_epsilon(0.0, 1.0, epsilon)
    assert spec.piecewise.report_valid(np.array([2.5])).all()
    assert spec.bound == math.nextafter(2.5, 3.0)
    assert not spec.piecewise.report_valid(np.array([spec.bound])).any()
    assert spec.certifies(epsilon)


# --- report grids ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_validate_report_names_the_first_bad_index(kind: str) -> None:
    spec = numeric_mechanism(kind, 0.0, 1.0, 2.0)
    good = spec.perturb_many(np.linspace(0, 1, 200))
    assert spec.validate_report(good) is None
    assert spec.validate_report([]) is None
    for bad in (math.nan, math.inf, -math.inf, math.nextafter(good[0], math.inf), 1e300):
        reports = good.copy()
        reports[17] = bad
        reports[150] = math.nan
        assert spec.validate_report(reports) == 17, bad
    assert spec.validate_report(good.reshape(20, 10)) is None
    with pytest.raises(TypeError, match="reports must be real numbers"):
        spec.validate_report(["x"])


def test_grids_are_as_documented() -> None:
    laplace = LaplaceMechanism(0.0, 1.0, 1.0, grid_bits=10)
    assert laplace.grid_step == 2.0**-9
    assert laplace.validate_report([-1.0, 1 + 2.0**-9, 2.0**43, -(2.0**43)]) is None
    assert laplace.validate_report([2.0**-10]) == 0
    assert laplace.validate_report([2.0**43 + 2.0**-9]) == 0
    duchi = DuchiMechanism(0.0, 1.0, 3.0)
    assert duchi.validate_report([3.0, -3.0, 3.0]) is None
    assert duchi.validate_report([3.0, 1.0]) == 1
    pm = PiecewiseMechanism(0.0, 1.0, center_cells=3, outer_cells=7, grid_bits=1)  # N = 10, h = ½
    assert pm.bound == 4.5
    assert pm.grid_step == 1.0
    assert pm.validate_report([-4.5, -0.5, 0.5, 4.5]) is None
    assert pm.validate_report([0.5, 0.0]) == 1  # even multiple of h: not a midpoint
    assert pm.validate_report([5.5]) == 0  # beyond the last cell
    hybrid = HybridMechanism(0.0, 1.0, 0.5, 2.25, 3, 7, 1)
    assert hybrid.validate_report([2.25, -2.25, 4.5, -0.5]) is None
    assert hybrid.validate_report([2.25, 2.0]) == 1
    assert hybrid.unit_bits == 2


# --- descriptions and explanations -------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_wire_form_round_trips_and_explain_states_epsilon(kind: str) -> None:
    spec = numeric_mechanism(kind, -5.0, 5.0, 1.5)
    description = spec.describe()
    assert description["mechanism"] == kind
    assert description["epsilon"] == spec.epsilon
    question = NUMERIC.question_for(spec)
    assert mechanism_of(question) == spec
    assert f"epsilon = {spec.epsilon:.2f}" in spec.explain()
    question.mechanism.CopyFrom(pb.Mechanism(registered=pb.RegisteredMechanism(name="x")))
    with pytest.raises(ValueError, match="unknown mechanism 'x'"):
        mechanism_of(question)


def test_variance_in_x_units() -> None:
    spec = DuchiMechanism(0.0, 10.0, 2.0)
    assert spec.variance_x(100) == pytest.approx(4.0 * 25 / 100)
    pm = PiecewiseMechanism.from_epsilon(0.0, 10.0, 2.0)
    assert pm.variance_x(4, "respondents") == pytest.approx(pm.worst_variance * 25 / 4)
    assert pm.variance_x(4) == pytest.approx((pm.worst_variance + 1) * 25 / 4, rel=1e-6)
    assert pm.normalize(7.5) == 0.5
    assert pm.to_x(0.5) == 7.5


# --- estimation from exact tallies -------------------------------------------------------


def test_tallies_are_exact_integers_and_order_free() -> None:
    spec = numeric_mechanism("hybrid", 0.0, 1.0, 2.0)
    mech = spec
    reports = mech.perturb_many(np.random.default_rng(1).random(3000), np.random.default_rng(2))
    whole = MeanTally.empty(spec).add(spec, reports)
    parts = (
        MeanTally.empty(spec)
        .add(spec, reports[2000:])
        .merge(MeanTally.empty(spec).add(spec, reports[:2000]))
    )
    assert whole == parts
    assert whole.n == 3000
    exact = [Fraction(y) for y in reports.tolist()]
    assert whole.mean == sum(exact) / 3000
    mean = sum(exact) / 3000
    assert whole.sample_variance == sum((y - mean) ** 2 for y in exact) / 2999


@pytest.mark.parametrize("kind", ["laplace", "duchi", "piecewise", "hybrid"])
@pytest.mark.parametrize("n", [10, 64, 65, 3000])
def test_mechanism_tally_is_the_exact_sums_of_z_and_z_squared(kind: str, n: int) -> None:
    # Duchi's reports take two values (its tally counts them), the others many (one
    # integer per report); both must give the exact integers.
    spec = numeric_mechanism(kind, 0.0, 1.0, 1.0)
    reports = spec.perturb_many(np.random.default_rng(n).random(n), np.random.default_rng(7))
    z = [Fraction(y) * 2**spec.unit_bits for y in reports.tolist()]
    assert all(v.denominator == 1 for v in z)
    assert spec.tally(reports) == [int(sum(z)), int(sum(v * v for v in z))]


def test_tally_rejects_bad_reports_and_foreign_units() -> None:
    spec = DuchiMechanism(0.0, 1.0, 3.0)
    with pytest.raises(ValueError, match=r"report 1 \(nan\) is not a possible duchi report"):
        MeanTally.empty(spec).add(spec, [3.0, math.nan])
    other = PiecewiseMechanism(0.0, 1.0, 3, 7, 1)
    with pytest.raises(ValueError, match="belongs to another mechanism"):
        MeanTally(unit_bits=5).add(other, [0.5])
    with pytest.raises(ValueError, match="unit_bits differ"):
        MeanTally(0).merge(MeanTally(1))
    with pytest.raises(ValueError, match="inconsistent tally"):
        MeanTally(0, n=2, total=10, total_squares=1)
    with pytest.raises(TypeError, match=r"total must be an integer, got 1\.5"):
        MeanTally(0, n=1, total=1.5, total_squares=3)  # type: ignore[arg-type]


def test_estimate_maps_back_clips_and_reports_both_errors() -> None:
    spec = DuchiMechanism(10.0, 20.0, bound=2.0)
    tally = MeanTally.empty(spec).add(spec, [2.0, 2.0, 2.0, -2.0])  # ȳ = 1
    est = estimate_mean(spec, tally, confidence=0.5)
    assert est.estimate_raw == 20.0
    assert est.estimate == 20.0
    # Sample sd of {2, 2, 2, −2} is 2, so s/√n = 1 on the [−1, 1] scale, 5 in x units.
    assert est.std_error == 5.0
    # Clopper–Pearson for 3 of 4 reports at +B: P(+B) = (1 + t/2)/2, so t = 2(2λ − 1).
    low = stats.beta.ppf(0.25, 3, 2)
    assert est.ci_low == pytest.approx(15 + 5 * 2 * (2 * low - 1))
    assert est.ci_high == 20.0
    assert est.std_error_worst == pytest.approx(math.sqrt(spec.variance_x(4)))
    assert (est.method, est.estimand, est.mechanism, est.n) == (
        "clopper-pearson", "population mean", "duchi", 4,
    )  # fmt: skip
    assert est.coverage.startswith("fixed n; at least 50% for every population")
    assert est.epsilon == math.log(3)
    assert est.to_dict()["confidence"] == 0.5
    above = estimate_mean(spec, MeanTally.empty(spec).add(spec, [2.0] * 3))
    assert above.estimate_raw == 25.0
    assert above.estimate == 20.0
    assert above.ci_low < above.ci_high == 20.0
    one = estimate_mean(spec, MeanTally.empty(spec).add(spec, [-2.0]))
    assert one.std_error == math.inf
    assert one.ci_low == 10.0 < one.ci_high
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        estimate_mean(spec, MeanTally.empty(spec))
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1"):
        estimate_mean(spec, tally, confidence=1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_confidence_just_below_one_gives_a_finite_interval(kind: str) -> None:
    # (1 + c)/2 rounds to 1 at c = 1 - 2^-53; quantiles come from the exact tail 2^-54.
    spec: Any = numeric_mechanism(kind, 0.0, 40.0, 1.0)  # every kind has a bound
    reports = [spec.bound, -spec.bound] * 2500 if kind != "laplace" else [1.0, -1.0] * 2500
    est = estimate_mean_from_reports(spec, reports, confidence=1 - 2**-53)
    assert est.method != "t"  # the t-interval only up to 95%
    assert est.estimate == est.estimate_raw == 20.0
    assert 0.0 < est.ci_low < 20.0 < est.ci_high < 40.0
    low, high = t_interval(5000, Fraction(0), Fraction(1), 1 - 2**-53)
    quantile = stats.t.isf(2.0**-54, 4999)
    assert 8 < quantile < 9
    assert (low, high) == pytest.approx((-quantile / math.sqrt(5000), quantile / math.sqrt(5000)))


def test_figures_beyond_the_float_range_are_inf_never_an_exception() -> None:
    # Specs a survey refuses (epsilon ~1e-308, a range of +-1e300), estimated directly.
    top = 1.7976931348623157e308
    duchi = DuchiMechanism(0.0, 40.0, bound=top)
    same = estimate_mean_from_reports(duchi, [top] * 3)
    assert (same.estimate, same.estimate_raw, same.std_error) == (40.0, math.inf, 0.0)
    assert (same.ci_low, same.ci_high, same.std_error_worst) == (0.0, 40.0, math.inf)
    spread = estimate_mean_from_reports(duchi, [top, -top, top])
    assert (spread.estimate, spread.estimate_raw, spread.std_error) == (40.0, math.inf, math.inf)
    assert (spread.ci_low, spread.ci_high) == (0.0, 40.0)
    wide = LaplaceMechanism(-1e300, 1e300, 1.0)
    low = estimate_mean_from_reports(wide, [-(2.0**43)] * 3)
    assert (low.estimate, low.estimate_raw) == (-1e300, -math.inf)
    assert (low.ci_low, low.ci_high, low.method) == (-1e300, 1e300, "range")  # excludes all


@pytest.mark.parametrize("kind", ["laplace", "piecewise", "hybrid"])
def test_t_interval_coverage_by_simulation(kind: str) -> None:
    # 1000 surveys of n = 200 at ε = 1 with a two-point population (x = 2 or 9 on [0, 10]).
    # The binomial SE of the coverage is 0.0069: allow 4 SE plus 0.01 for the t-interval's
    # own approximation error (the exact Duchi computation above stays within 0.007).
    reps, n = 1000, 200
    spec = numeric_mechanism(kind, 0.0, 10.0, 1.0)
    rng = np.random.default_rng(2026)
    truth = np.where(rng.random((reps, n)) < 0.3, 9.0, 2.0)
    reports = spec.perturb_many(truth, rng)
    covered = 0
    for row in reports:
        est = estimate_mean_from_reports(spec, row)
        covered += est.ci_low <= 0.3 * 9 + 0.7 * 2 <= est.ci_high
        assert est.method == "t"  # n = 200 at ε = 1: the rule's t regime
    slack = 4 * math.sqrt(0.95 * 0.05 / reps) + 0.01
    assert abs(covered / reps - 0.95) <= slack


@pytest.mark.parametrize("kind", [PiecewiseMechanism, HybridMechanism])
@pytest.mark.parametrize("epsilon", [2.0**-19, 1.5 * 2.0**-20, 2.0**-20])
def test_a_tiny_epsilon_still_gives_a_grid_the_wire_carries(
    kind: type[PiecewiseMechanism] | type[HybridMechanism], epsilon: float
) -> None:
    # Below ε = 2^-19 (numeric mechanisms take ε ≥ 2^-20) the centre piece is wider than
    # 2^20 cells of width 1, and from_epsilon chose a negative grid_bits, which the wire's
    # unsigned field refused ("Value out of range: -1"). The grid now stays at cells of
    # width 1 or finer.
    mechanism = kind.from_epsilon(0.0, 1.0, epsilon)
    message = mechanism.to_message()
    assert message.WhichOneof("kind") in {"piecewise", "hybrid"}
    assert mechanism.certifies(epsilon)
    assert mechanism.epsilon <= epsilon
