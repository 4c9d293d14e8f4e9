"""Frequency estimation: support counts, unbiasedness, variance, coverage, simplex projection."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.typing import NDArray
from scipy import stats

from deniable.shared import Estimand
from deniable.shared.mechanisms import (
    FrequencyOracle,
    GeneralizedRandomizedResponse,
    OlhReports,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    ReportValueError,
    estimate_frequencies,
    frequency_arrays,
)
from deniable.shared.mechanisms._universal_hash import HASH_PRIME, universal_hash_reference
from deniable.shared.mechanisms.olh import CHUNK_ELEMENTS
from deniable.shared.stats import project_to_simplex

P_FLOOR = 1e-6  # statistical tests fail only below this p-value (one false alarm in a million runs)
# At ε = 1 the mechanism's noise dominates the variance; at ε = 4 the sampling term
# f(1−f)/n does, so both parts of the variance formula are checked.
SPECS = [
    kind.from_epsilon(5, eps)
    for eps in (1.0, 4.0)
    for kind in (GeneralizedRandomizedResponse, OptimizedUnaryEncoding, OptimizedLocalHashing)
]


def spec_id(spec: FrequencyOracle) -> str:
    return f"{spec.name}-eps{math.floor(spec.epsilon + 0.5)}-k{spec.k}"


def simulate_counts(
    mechanism: FrequencyOracle, truth: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    """Support counts per row of ``truth`` (shape (R, n)): one simulated survey per row."""
    reps, n = truth.shape
    reports = mechanism.perturb_many(truth.ravel(), rng=rng)
    return np.stack(
        [mechanism.support_counts(reports[row * n : (row + 1) * n]) for row in range(reps)]
    )


# --- support counts -------------------------------------------------------------------------


def test_grr_and_oue_counts() -> None:
    grr = GeneralizedRandomizedResponse(4, 0.5)
    assert grr.support_counts(np.array([0, 2, 2, 1])).tolist() == [1, 1, 2, 0]
    assert grr.tally(np.array([0, 2, 2, 1])) == [1, 1, 2, 0]
    assert GeneralizedRandomizedResponse(3, 0.5).support_counts(
        np.array([], np.int64)
    ).tolist() == [
        0,
        0,
        0,
    ]
    oue = OptimizedUnaryEncoding(3, 0.25)
    bits = np.array([[1, 0, 1], [1, 1, 0]], dtype=bool)
    assert oue.support_counts(bits).tolist() == [2, 1, 1]
    assert oue.support_counts(bits).dtype == np.int64
    assert oue.support_counts(np.zeros((0, 3), dtype=bool)).tolist() == [0, 0, 0]


def test_olh_counts_match_the_definition_in_any_chunking_and_batching(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    k, g = 37, 5
    mechanism = OptimizedLocalHashing(k, g, 0.6)
    rng = np.random.default_rng(8)
    reports = mechanism.perturb_many(rng.integers(0, k, 3000), rng=rng)
    a, b, y = reports
    slow = np.zeros(k, dtype=np.int64)
    for ai, bi, yi in zip(a[:300].tolist(), b[:300].tolist(), y[:300].tolist(), strict=True):
        for v in range(k):
            slow[v] += universal_hash_reference(ai, bi, v, g) == yi
    assert mechanism.support_counts(reports[:300]).tolist() == slow.tolist()
    whole = mechanism.support_counts(reports)
    assert whole.dtype == np.int64
    for chunk in (1, 36, 37, 1000, 1 << 30):
        monkeypatch.setattr("deniable.shared.mechanisms.olh.CHUNK_ELEMENTS", chunk)
        assert mechanism.support_counts(reports).tolist() == whole.tolist()
    monkeypatch.setattr("deniable.shared.mechanisms.olh.CHUNK_ELEMENTS", CHUNK_ELEMENTS)
    tally = np.zeros(k, dtype=np.int64)  # a running tally, one batch at a time
    for i in range(0, 3000, 700):
        tally += mechanism.support_counts(reports[i : i + 700])
    assert tally.tolist() == whole.tolist()
    decoded = mechanism.decode(np.stack([a, b, y.astype(np.uint64)], axis=1))
    assert mechanism.support_counts(decoded).tolist() == whole.tolist()


def test_reports_are_read_from_the_wire_form_and_select_by_mask() -> None:
    olh = OptimizedLocalHashing(3, 2, 0.5)
    rows = np.array([[1, 2, 0], [3, 4, 1], [5, 6, 1]], dtype=np.uint64)
    decoded = olh.decode(rows)
    assert isinstance(decoded, OlhReports)
    assert len(decoded[np.array([True, False, True])]) == 2
    assert decoded[1:].a.tolist() == [3, 5]
    oue = OptimizedUnaryEncoding(9, 0.25)
    assert oue.decode([b"\x05\x01", b"\x00\x00"]).sum(axis=0).tolist() == [
        1, 0, 1, 0, 0, 0, 0, 0, 1,
    ]  # fmt: skip


GRR3 = GeneralizedRandomizedResponse(3, 0.5)
OUE3 = OptimizedUnaryEncoding(3, 0.25)
OLH32 = OptimizedLocalHashing(3, 2, 0.5)


@pytest.mark.parametrize(
    ("mechanism", "values", "row", "field", "message"),
    [
        (GRR3, np.array([0, 3]), 1, "option", "3 is not below k=3"),
        (OUE3, [b"\x01", b"\x09"], 1, "bits", "has padding bits set beyond k=3"),
        (OUE3, [b"\x01", b"\x01\x00"], 1, "bits", "must be 1 bytes for k=3, got 2"),
        (OLH32, [[0, 0, 0], [HASH_PRIME, 0, 0]], 1, "hashed.a", r"is not below 2\^61-1"),
        (OLH32, [[0, HASH_PRIME + 5, 0]], 0, "hashed.b", r"is not below 2\^61-1"),
        (OLH32, [[0, 0, 1], [0, 0, 2]], 1, "hashed.value", "2 is not below g=2"),
    ],
)
def test_values_off_the_output_domain_are_refused_naming_row_and_field(
    mechanism: FrequencyOracle, values: object, row: int, field: str, message: str
) -> None:
    with pytest.raises(ReportValueError, match=message) as caught:
        mechanism.decode(values)
    assert (caught.value.row, caught.value.field) == (row, field)


# --- the estimator ----------------------------------------------------------------------------


def test_estimate_fields_and_projection() -> None:
    spec = GeneralizedRandomizedResponse(k=3, alpha=0.5)
    est = estimate_frequencies([10, 5, 5], 20, spec)
    # p* = 2/3, q* = 1/6: f̂ = (C/n − 1/6)/(1/2).
    assert est.estimate_raw == pytest.approx((2 / 3, 1 / 6, 1 / 6))
    assert est.estimate == pytest.approx(est.estimate_raw)
    assert (est.n, est.k, est.mechanism, est.epsilon) == (20, 3, "grr", spec.epsilon)
    assert (est.method, est.confidence, est.estimand) == ("clopper-pearson", 0.95, "population")
    assert est.support_counts == (10, 5, 5)
    for low, raw, high in zip(est.ci_low, est.estimate_raw, est.ci_high, strict=True):
        assert 0.0 <= low <= raw <= high <= 1.0
    expected_se = [math.sqrt(spec.variance(f, 20)) for f in est.estimate_raw]
    assert est.std_error == pytest.approx(expected_se)
    json.dumps(est.to_dict(), allow_nan=False)
    # Raw estimates outside [0, 1] are projected; each interval contains the projected one.
    skewed = estimate_frequencies([0, 0, 20], 20, spec)
    assert skewed.estimate_raw == pytest.approx((-1 / 3, -1 / 3, 5 / 3))
    assert skewed.estimate == (0.0, 0.0, 1.0)
    assert skewed.ci_low[0] == 0.0
    fixed = estimate_frequencies([10, 5, 5], 20, spec, estimand="respondents", method="wilson")
    assert fixed.std_error[0] < est.std_error[0]
    assert fixed.method == "wilson"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (([1, 1], 2, GRR3), {}, ValueError, r"must have length k=3, got shape \(2,\)"),
        (([1, 1, 1.0], 3, GRR3), {}, TypeError, r"support_counts must be integers"),
        (
            ([1, 4, 0], 3, OptimizedUnaryEncoding(3, 0.2)),
            {},
            ValueError,
            r"in \[0, n=3\], got 4 for option 1",
        ),
        (([-1, 2, 2], 3, OptimizedUnaryEncoding(3, 0.2)), {}, ValueError, r"got -1 for option 0"),
        (([1, 1, 0], 3, GRR3), {}, ValueError, r"must sum to n=3, got 2"),
        (([0, 0, 0], 0, GRR3), {}, ValueError, r"n must be >= 1, got 0"),
        (([1, 1, 1], 3, GRR3), {"confidence": 1.0}, ValueError, r"between 0 and 1, got 1.0"),
        (([1, 1, 1], 3, GRR3), {"method": "exact"}, ValueError, r"unknown method 'exact'"),
        (([1, 1, 1], 3, GRR3), {"estimand": "all"}, ValueError, r"unknown estimand 'all'"),
        (([1, 1, 1], 3, 0.5), {}, TypeError, r"spec must be a frequency oracle, got float"),
    ],
)
def test_invalid_estimate_arguments_are_rejected(
    args: tuple[object, ...], kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        estimate_frequencies(*args, **kwargs)  # type: ignore[arg-type]


SHARES = np.array([0.4, 0.3, 0.2, 0.1, 0.0])


@pytest.mark.parametrize("estimand", ["respondents", "population"])
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_estimates_are_unbiased_with_the_stated_variance(
    spec: FrequencyOracle, estimand: Estimand
) -> None:
    # R simulated surveys of n reports. respondents: the same n answers every time;
    # population: answers drawn i.i.d. from the shares in each survey.
    reps, n = 3000, 400
    rng = np.random.default_rng(20261123)
    if estimand == "respondents":
        truth = np.tile(np.repeat(np.arange(5), (SHARES * n).astype(int)), (reps, 1))
    else:
        truth = rng.choice(5, size=(reps, n), p=SHARES)
    counts = simulate_counts(spec, truth, rng)
    raw = frequency_arrays(counts, n, spec, 0.95, "clopper-pearson", estimand)["estimate_raw"]
    for v, share in enumerate(SHARES):
        sigma2 = spec.variance(float(share), n, estimand)
        # Mean of R estimates: within 4 standard errors of the truth.
        assert abs(raw[:, v].mean() - share) <= 4 * math.sqrt(sigma2 / reps)
        # (R−1)s²/σ² is chi-square with R−1 degrees of freedom (f̂ is a sum of n bounded
        # independent terms, so nearly normal): two-sided p-value above the floor.
        statistic = (reps - 1) * raw[:, v].var(ddof=1) / sigma2
        tail = min(stats.chi2.cdf(statistic, reps - 1), stats.chi2.sf(statistic, reps - 1))
        assert 2 * tail > P_FLOOR, (v, statistic / (reps - 1))


GRID_SPECS = [
    GeneralizedRandomizedResponse.from_epsilon(3, 1.0),
    GeneralizedRandomizedResponse.from_epsilon(10, 0.5),
    GeneralizedRandomizedResponse.from_epsilon(50, 4.0),
    OptimizedUnaryEncoding.from_epsilon(10, 1.0),
    OptimizedUnaryEncoding.from_epsilon(100, 0.5),
    OptimizedLocalHashing.from_epsilon(100, 1.0),
]


@pytest.mark.parametrize("spec", GRID_SPECS, ids=spec_id)
@pytest.mark.parametrize("n", [18, 100, 1000])
def test_clopper_pearson_coverage_is_at_least_nominal_exactly(
    spec: FrequencyOracle, n: int
) -> None:
    # No Monte Carlo: sum the exact distribution of C_v over every count.
    # population: C_v ~ Binomial(n, q* + f(p*−q*)); respondents with n_v of n choosing v:
    # C_v ~ Binomial(n_v, p*) + Binomial(n − n_v, q*) (OLH: q* = 1/g up to 2^−61).
    counts = np.arange(n + 1)
    interval = frequency_arrays(counts, n, spec, 0.95, "clopper-pearson", "population")
    low, high = interval["ci_low"], interval["ci_high"]
    for share in (0.0, 0.01, 0.3, 0.5, 1.0):
        pmf = stats.binom.pmf(counts, n, spec.q_star + share * (spec.p_star - spec.q_star))
        assert pmf[(low <= share) & (share <= high)].sum() >= 0.95 - 1e-12
    for chosen in sorted({0, 1, n // 10, n // 3, n // 2, n}):
        pmf = np.convolve(
            stats.binom.pmf(np.arange(chosen + 1), chosen, spec.p_star),
            stats.binom.pmf(np.arange(n - chosen + 1), n - chosen, spec.q_star),
        )
        share = chosen / n
        assert pmf[(low <= share) & (share <= high)].sum() >= 0.95 - 1e-12


def test_wald_would_undercover_which_is_why_clopper_pearson_is_the_default() -> None:
    spec, n, share = GeneralizedRandomizedResponse.from_epsilon(50, 4.0), 18, 0.01
    counts = np.arange(n + 1)
    pmf = stats.binom.pmf(counts, n, spec.q_star + share * (spec.p_star - spec.q_star))
    wald = frequency_arrays(counts, n, spec, 0.95, "wald", "population")
    covered = (wald["ci_low"] <= share) & (share <= wald["ci_high"])
    assert pmf[covered].sum() < 0.5


@pytest.mark.parametrize("estimand", ["respondents", "population"])
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_end_to_end_coverage_from_real_reports(spec: FrequencyOracle, estimand: Estimand) -> None:
    # Each option's interval covers its share in at least 95% of R independent surveys:
    # the covered count is Binomial(R, coverage), so it must not fall below the 1e-6
    # quantile of Binomial(R, 0.95).
    reps, n = 2000, 200
    rng = np.random.default_rng(20261124)
    if estimand == "respondents":
        truth = np.tile(np.repeat(np.arange(5), (SHARES * n).astype(int)), (reps, 1))
        shares = np.tile(SHARES, (reps, 1))
    else:
        truth = rng.choice(5, size=(reps, n), p=SHARES)
        shares = np.tile(SHARES, (reps, 1))
    counts = simulate_counts(spec, truth, rng)
    interval = frequency_arrays(counts, n, spec, 0.95, "clopper-pearson", estimand)
    covered = ((interval["ci_low"] <= shares) & (shares <= interval["ci_high"])).sum(axis=0)
    floor = stats.binom.ppf(P_FLOOR, reps, 0.95)
    assert (covered >= floor).all(), covered / reps


# --- projection onto the simplex -------------------------------------------------------------


def brute_force_projection(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """The nearest point over all supports S: x = v − θ_S on S, 0 elsewhere, if x_S >= 0."""
    best, best_distance = np.zeros_like(v), math.inf
    for size in range(1, v.size + 1):
        for support in itertools.combinations(range(v.size), size):
            index = list(support)
            x = np.zeros_like(v)
            x[index] = v[index] - (v[index].sum() - 1.0) / size
            if (x >= -1e-15).all() and np.linalg.norm(x - v) < best_distance:
                best, best_distance = x, float(np.linalg.norm(x - v))
    return best


def assert_on_simplex_and_kkt(v: NDArray[np.float64], x: NDArray[np.float64]) -> None:
    """KKT: x >= 0, Σx = 1, and one θ with x_i = v_i − θ where x_i > 0, v_i <= θ where 0."""
    scale = max(1.0, float(np.abs(v).max()))
    tolerance = 1e-12 * scale * v.size
    assert (x >= 0).all()
    assert x.sum() == pytest.approx(1.0, abs=tolerance)
    positive = x > 0
    theta = (v - x)[positive]
    assert theta.max() - theta.min() <= tolerance
    assert (v[~positive] <= theta.mean() + tolerance).all()


@pytest.mark.parametrize(
    ("v", "expected"),
    [
        ([0.5, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]),
        ([1.2, -0.1, -0.1], [1.0, 0.0, 0.0]),
        ([0.6, 0.6, -0.2], [0.5, 0.5, 0.0]),
        ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
        ([-3.0, -3.0], [0.5, 0.5]),
        ([7.0], [1.0]),
    ],
)
def test_projection_examples(v: list[float], expected: list[float]) -> None:
    assert project_to_simplex(v) == pytest.approx(expected, abs=1e-15)


def test_projection_matches_brute_force_and_works_along_the_last_axis() -> None:
    rng = np.random.default_rng(2)
    batch = rng.normal(0.2, 0.6, size=(300, 6))
    projected = project_to_simplex(batch)
    assert projected.shape == batch.shape
    for v, x in zip(batch, projected, strict=True):
        assert x == pytest.approx(brute_force_projection(v), abs=1e-12)
        assert_on_simplex_and_kkt(v, x)


@given(hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(-1e3, 1e3)))
def test_projection_properties(v: NDArray[np.float64]) -> None:
    x = project_to_simplex(v)
    assert_on_simplex_and_kkt(v, x)
    again = project_to_simplex(x)  # idempotent: a point of the simplex projects to itself
    assert again == pytest.approx(x, abs=1e-12)
    # No point of the simplex is closer to v (check the vertices and the centre).
    distance = np.linalg.norm(x - v)
    for point in [*np.eye(v.size), np.full(v.size, 1 / v.size)]:
        assert distance <= np.linalg.norm(point - v) + 1e-9


@given(hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(0.0, 1.0)))
def test_points_of_the_simplex_are_fixed(weights: NDArray[np.float64]) -> None:
    if weights.sum() == 0:
        weights = np.ones_like(weights)
    point = weights / weights.sum()
    assert project_to_simplex(point) == pytest.approx(point, abs=1e-15)


def test_projection_rejects_empty_and_non_finite_input() -> None:
    with pytest.raises(ValueError, match=r"at least one entry on the last axis, got \(0,\)"):
        project_to_simplex([])
    with pytest.raises(ValueError, match="values must be finite"):
        project_to_simplex([0.5, math.nan])
