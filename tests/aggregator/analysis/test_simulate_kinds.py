"""Simulated multiple-choice and numeric surveys: estimates, coverage and variance vs theory."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator.analysis.simulation._categorical import simulate_categorical
from deniable.aggregator.analysis.simulation._distributions import (
    NumericDistribution,
    check_shares,
    parse_options,
    parse_shares,
)
from deniable.aggregator.analysis.simulation._grpc_kinds import (
    categorical_grpc_submitter,
    numeric_grpc_submitter,
)
from deniable.aggregator.analysis.simulation._numeric import estimate_variance, simulate_numeric
from deniable.shared.mechanisms import DuchiMechanism, estimate_frequencies, mechanism_of
from deniable.shared.mechanisms._frequency_estimate import exact_frequency_coverage
from deniable.shared.mechanisms._mean import estimate_mean_from_reports
from deniable.shared.questions import categorical_mechanism, numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli

SIGMAS = 4.0  # every statistical check allows 4 standard errors (two-sided, P ≈ 6e-5)


# --- inputs -------------------------------------------------------------------------------


def test_options_and_shares_parse() -> None:
    assert parse_options("4") == ("0", "1", "2", "3")
    assert parse_options(" yes , no,maybe ") == ("yes", "no", "maybe")
    assert parse_shares("0.5, 0.3,0.2") == (0.5, 0.3, 0.2)
    assert check_shares([0.1] * 10, 10) == (0.1,) * 10  # sums to 1 within 1e-9
    assert check_shares([1.0, 0.0], 2) == (1.0, 0.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check_shares([0.5, 0.6, -0.1], 3), "share 2 must be a finite number >= 0"),
        (lambda: check_shares([0.5, math.nan], 2), "share 1 must be a finite number >= 0, got nan"),
        (lambda: check_shares([0.5, 0.4], 2), r"must sum to 1 \(within 1e-9\), got 0.9"),
        (lambda: check_shares([0.5, 0.5 + 2e-9], 2), "must sum to 1"),
        (lambda: check_shares([0.5, 0.5], 3), r"one share per option \(k=3\), got 2"),
        (lambda: parse_shares("0.5,abc"), "'abc' is not a number"),
        (lambda: parse_options("1"), "k must be between 2 and 1024 options, got 1"),
        (lambda: parse_options("a,b,a"), "option names must be distinct, got 'a' twice"),
        (lambda: parse_options("a,,b"), "option names must be non-empty strings, got ''"),
        (lambda: parse_options("only"), r"need 2 to 1024 options .* got 1: \['only'\]"),
        (lambda: NumericDistribution.parse("gauss"), "unknown distribution 'gauss'"),
        (lambda: NumericDistribution.parse("beta:1"), "unknown distribution 'beta:1'"),
        (lambda: NumericDistribution.parse("beta:0,2"), "beta shapes must be > 0, got a=0.0"),
        (lambda: NumericDistribution.parse("constant:x"), "bad distribution 'constant:x'"),
        (lambda: NumericDistribution.parse("constant:inf"), "value must be a finite number"),
        (
            lambda: NumericDistribution.parse("constant:200").check_range(0.0, 100.0),
            r"constant value 200.0 is outside \[0.0, 100.0\]",
        ),
    ],
)  # fmt: skip
def test_invalid_inputs_raise_naming_the_value(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_numeric_distribution_moments() -> None:
    beta = NumericDistribution.parse("beta:2,5")
    assert beta.mean(10.0, 20.0) == pytest.approx(10.0 + 10.0 * 2 / 7)
    assert beta.variance(10.0, 20.0) == pytest.approx(100.0 * 10 / (49 * 8))
    assert NumericDistribution.parse("uniform").variance(0.0, 6.0) == pytest.approx(3.0)
    assert NumericDistribution.parse("constant:4").variance(0.0, 6.0) == 0.0
    for text in ("uniform", "beta:0.5,0.5", "beta:3,1.5"):
        points, weights = NumericDistribution.parse(text).quadrature(0.0, 1.0)
        assert weights.sum() == pytest.approx(1.0, abs=1e-12)
        assert points @ weights == pytest.approx(NumericDistribution.parse(text).mean(0.0, 1.0))


def test_simulations_reject_invalid_input() -> None:
    spec = categorical_mechanism("grr", 3, 1.0)
    with pytest.raises(ValueError, match=r"share 1 must be a finite number >= 0, got -0\.2"):
        simulate_categorical(100, [0.6, -0.2, 0.6], spec)
    with pytest.raises(ValueError, match="need k=3 option names, got 2"):
        simulate_categorical(100, [0.6, 0.2, 0.2], spec, options=["a", "b"])
    with pytest.raises(ValueError, match="participants must be >= 1, got 0"):
        simulate_categorical(0, [0.6, 0.2, 0.2], spec)
    with pytest.raises(ValueError, match="unknown method 'bootstrap'"):
        simulate_categorical(10, [0.6, 0.2, 0.2], spec, method="bootstrap")
    with pytest.raises(TypeError, match="spec must be a categorical spec"):
        simulate_categorical(10, [0.5, 0.5], numeric_mechanism("duchi", 0.0, 1.0, 1.0))  # type: ignore[arg-type]
    numeric = numeric_mechanism("duchi", 0.0, 10.0, 1.0)
    with pytest.raises(ValueError, match=r"constant value 11.0 is outside \[0.0, 10.0\]"):
        simulate_numeric(100, "constant:11", numeric)
    with pytest.raises(ValueError, match="repeats must be >= 1, got 0"):
        simulate_numeric(100, "uniform", numeric, repeats=0)


# --- categorical --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["grr", "oue", "olh"])
def test_categorical_estimates_are_near_the_truth(kind: str) -> None:
    shares = [0.5, 0.3, 0.15, 0.05, 0.0]
    spec = categorical_mechanism(kind, 5, 1.0)
    result = simulate_categorical(20_000, shares, spec, options=list("abcde"), seed=7)
    assert result.options == ("a", "b", "c", "d", "e")
    assert result.mechanism == spec.describe()
    assert result.randomness == "seeded-pcg64"
    for v, row in enumerate(result.per_option):
        assert row.std_theory == math.sqrt(spec.variance(shares[v], 20_000))
        assert abs(result.first.estimate_raw[v] - shares[v]) <= SIGMAS * row.std_theory
        # The population draw is multinomial: its sample share is within 4 SE of the share.
        assert abs(row.sample_share - shares[v]) <= SIGMAS * math.sqrt(
            shares[v] * (1 - shares[v]) / 20_000
        )
        assert row.coverage is None
        assert row.std_estimate_raw is None
    assert sum(result.first.estimate) == pytest.approx(1.0)


def test_seeded_categorical_simulation_is_reproducible() -> None:
    spec = categorical_mechanism("olh", 4, 2.0)
    first = simulate_categorical(3000, [0.4, 0.3, 0.2, 0.1], spec, repeats=3, seed=11)
    again = simulate_categorical(3000, [0.4, 0.3, 0.2, 0.1], spec, repeats=3, seed=11)
    assert first.first == again.first
    assert first.per_option == again.per_option
    data = first.to_dict()
    assert data["estimate"]["n"] == 3000
    assert "first" not in data
    assert len(data["per_option"]) == 4
    json.dumps(data)


def test_exact_coverage_of_clopper_pearson_is_at_least_nominal() -> None:
    for kind in ("grr", "oue", "olh"):
        spec = categorical_mechanism(kind, 4, 1.0)
        for share in (0.0, 0.02, 0.25, 0.6, 1.0):
            for n in (20, 500):
                assert exact_frequency_coverage(n, share, spec, 0.95, "clopper-pearson") >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "k", "epsilon", "shares", "seed"),
    [
        ("grr", 3, 1.0, (0.6, 0.3, 0.1), 101),
        ("oue", 4, 2.0, (0.25, 0.25, 0.45, 0.05), 102),
        ("olh", 6, 1.0, (0.4, 0.2, 0.2, 0.1, 0.1, 0.0), 103),
        ("grr", 5, 0.5, (0.2, 0.2, 0.2, 0.2, 0.2), None),  # the OS CSPRNG path
    ],
)
def test_categorical_coverage_and_variance_match_theory(
    kind: str, k: int, epsilon: float, shares: tuple[float, ...], seed: int | None
) -> None:
    # R repeats of n = 1500: each f̂_v is close to normal, so s²/σ² has SE ≈ sqrt(2/(R−1));
    # the mean has SE σ/√R; coverage has SE sqrt(c(1−c)/R) around its exact value.
    n, repeats = 1500, 400
    spec = categorical_mechanism(kind, k, epsilon)
    result = simulate_categorical(n, shares, spec, repeats=repeats, seed=seed)
    for v, row in enumerate(result.per_option):
        assert row.coverage is not None
        assert row.variance_empirical is not None
        assert row.variance_theory == spec.variance(shares[v], n, "population")
        assert row.coverage_exact >= 0.95  # Clopper–Pearson
        c = row.coverage_exact
        assert abs(row.coverage - c) <= SIGMAS * math.sqrt(c * (1 - c) / repeats) + 1e-12
        ratio = row.variance_empirical / row.variance_theory
        assert abs(ratio - 1) <= SIGMAS * math.sqrt(2 / (repeats - 1))
        assert abs(row.mean_estimate_raw - shares[v]) <= SIGMAS * row.std_theory / math.sqrt(
            repeats
        )


def test_simulation_reports_how_often_all_options_are_covered_at_once() -> None:
    # k = 10: the per-option intervals all cover at once in far fewer than 95% of the
    # repeats (about 0.69 here); the simultaneous ones in at least 95%.
    shares = [0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.02, 0.0]
    repeats = 400
    result = simulate_categorical(
        300, shares, categorical_mechanism("grr", 10, 2.0), repeats=repeats, seed=18
    )
    assert result.joint_coverage is not None
    assert result.simultaneous_coverage is not None
    joint_misses = round((1 - result.joint_coverage) * repeats)
    simultaneous_misses = round((1 - result.simultaneous_coverage) * repeats)
    # False alarms at most 1e-4 each: a true miss rate of 5% (simultaneous) would rarely
    # give more misses, a true joint miss rate of 10% or less rarely this many.
    assert simultaneous_misses <= stats.binom.isf(1e-4, repeats, 0.05)
    assert joint_misses > stats.binom.isf(1e-4, repeats, 0.10)
    assert min(row.coverage or 0.0 for row in result.per_option) > result.joint_coverage
    assert result.joint_coverage_se == pytest.approx(
        math.sqrt(result.joint_coverage * (1 - result.joint_coverage) / repeats)
    )
    widths = [row.mean_width for row in result.per_option]
    assert all(
        wide > narrow
        for wide, narrow in zip(result.simultaneous_mean_width, widths, strict=True)
        if narrow > 0
    )


def test_categorical_submit_must_return_the_local_estimate() -> None:
    spec = categorical_mechanism("grr", 3, 1.0)
    shares = [0.5, 0.3, 0.2]

    def honest(reports: Any) -> Any:
        return estimate_frequencies(spec.support_counts(reports), len(reports), spec)

    def lossy(reports: Any) -> Any:
        return estimate_frequencies(spec.support_counts(reports[1:]), len(reports) - 1, spec)

    local = simulate_categorical(800, shares, spec, repeats=2, seed=3)
    remote = simulate_categorical(800, shares, spec, repeats=2, seed=3, submit=honest)
    assert remote.first == local.first
    assert remote.transport == "grpc"
    assert local.transport == "inprocess"
    with pytest.raises(RuntimeError, match="disagrees with the 800 reports sent: n=799"):
        simulate_categorical(800, shares, spec, seed=3, submit=lossy)


# --- numeric ------------------------------------------------------------------------------


def test_estimate_variance_matches_closed_forms() -> None:
    duchi = DuchiMechanism.from_epsilon(0.0, 10.0, 1.0)
    # Duchi: E[y² | t] = B² for every t, so Var(y) = B² − (E t)²: B² when E t = 0.
    for text in ("uniform", "beta:0.5,0.5", "beta:3,3"):
        variance = estimate_variance(duchi, NumericDistribution.parse(text), 100)
        assert variance == pytest.approx(duchi.bound**2 * 25.0 / 100, rel=1e-12)
    # A constant: no spread of the truth, only the mechanism's own Var(y | t).
    piecewise = numeric_mechanism("piecewise", 0.0, 10.0, 2.0)
    exact = estimate_variance(piecewise, NumericDistribution.parse("constant:7.5"), 40)
    assert exact == piecewise.variance(0.5) * 25.0 / 40
    # Never above the worst case over all distributions.
    for kind in ("laplace", "duchi", "piecewise", "hybrid"):
        spec = numeric_mechanism(kind, 0.0, 10.0, 1.0)
        for text in ("uniform", "beta:2,5", "constant:0", "constant:10"):
            distribution = NumericDistribution.parse(text)
            assert estimate_variance(spec, distribution, 7) <= spec.variance_x(7) * (1 + 1e-12)


@pytest.mark.parametrize("kind", ["laplace", "duchi", "piecewise", "hybrid"])
def test_numeric_estimates_are_near_the_truth(kind: str) -> None:
    spec = numeric_mechanism(kind, 0.0, 100.0, 1.0)
    result = simulate_numeric(20_000, "beta:2,5", spec, seed=5)
    assert result.true_mean == pytest.approx(100 * 2 / 7)
    assert result.distribution == "beta:2,5"
    assert result.mechanism == spec.describe()
    assert abs(result.first.estimate_raw - result.true_mean) <= SIGMAS * result.std_theory
    assert result.std_theory <= result.std_error_worst
    assert result.coverage is None
    data = result.to_dict()
    assert data["estimate"]["n"] == 20_000
    assert "first" not in data


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "distribution", "epsilon", "seed"),
    [
        ("laplace", "constant:30", 1.0, 201),
        ("duchi", "uniform", 1.0, 202),
        ("piecewise", "beta:2,5", 2.0, 203),
        ("hybrid", "beta:0.5,0.5", 4.0, 204),
        ("hybrid", "uniform", 1.0, None),  # the OS CSPRNG path
    ],
)
def test_numeric_coverage_and_variance_match_theory(
    kind: str, distribution: str, epsilon: float, seed: int | None
) -> None:
    # Each estimate is a mean of n = 2000 reports with finite fourth moments, so it is close
    # to normal: s²/σ² has SE ≈ sqrt(2/(R−1)) and the mean has SE σ/√R. The t-interval's
    # two-sided coverage error is O(1/n) (Edgeworth), negligible beside the Monte Carlo SE.
    n, repeats = 2000, 400
    spec = numeric_mechanism(kind, 0.0, 100.0, epsilon)
    result = simulate_numeric(n, distribution, spec, repeats=repeats, seed=seed)
    assert result.coverage is not None
    assert result.variance_empirical is not None
    ratio = result.variance_empirical / result.variance_theory
    assert abs(ratio - 1) <= SIGMAS * math.sqrt(2 / (repeats - 1))
    assert abs(result.mean_estimate_raw - result.true_mean) <= (
        SIGMAS * result.std_theory / math.sqrt(repeats)
    )
    assert abs(result.coverage - 0.95) <= SIGMAS * math.sqrt(0.95 * 0.05 / repeats)


def test_numeric_submit_must_return_the_local_estimate() -> None:
    from deniable.shared.mechanisms._mean import estimate_mean_from_reports

    spec = numeric_mechanism("piecewise", -1.0, 1.0, 1.0)
    local = simulate_numeric(500, "uniform", spec, repeats=2, seed=9)
    remote = simulate_numeric(
        500, "uniform", spec, repeats=2, seed=9,
        submit=lambda reports: estimate_mean_from_reports(spec, reports),
    )  # fmt: skip
    assert remote.first == local.first
    assert remote.transport == "grpc"
    with pytest.raises(RuntimeError, match="disagrees with the 500 reports sent: n=499"):
        simulate_numeric(
            500, "uniform", spec, seed=9,
            submit=lambda reports: estimate_mean_from_reports(spec, np.asarray(reports)[1:]),
        )  # fmt: skip


# --- over gRPC: a real embedded aggregator on 127.0.0.1:0 -------------------------------


@pytest.mark.parametrize("kind", ["grr", "oue", "olh"])
def test_categorical_grpc_estimate_equals_the_in_process_one(kind: str) -> None:
    spec = categorical_mechanism(kind, 4, 1.0)
    rng = np.random.default_rng(17)
    truth = rng.choice(4, size=900, p=[0.4, 0.3, 0.2, 0.1])
    reports = spec.perturb_many(truth, rng=rng)
    names = ["iOS", "Android", "Linux", "other"]
    with categorical_grpc_submitter(
        spec, options=names, confidence=0.9, method="wilson", batch_size=250
    ) as submit:
        remote = submit(reports)
        assert (submit.reports_sent, len(submit.surveys), submit.embedded) == (900, 1, True)
        survey = submit.client.get_survey(submit.surveys[0])
    local = estimate_frequencies(spec.support_counts(reports), 900, spec, 0.9, method="wilson")
    assert remote == local  # every field, read back from GetEstimate
    assert (remote.n, remote.k, remote.mechanism) == (900, 4, kind)
    assert (survey.reports, survey.state) == (900, pb.SURVEY_STATE_CLOSED)
    (question,) = survey.questions
    assert list(question.categorical.options) == names
    assert question.mechanism == spec.to_message()
    assert mechanism_of(question) == spec


@pytest.mark.parametrize("kind", ["laplace", "duchi", "piecewise", "hybrid"])
def test_numeric_grpc_estimate_equals_the_in_process_one(kind: str) -> None:
    spec = numeric_mechanism(kind, -10.0, 30.0, 1.0)
    rng = np.random.default_rng(23)
    reports = spec.perturb_many(rng.uniform(-10.0, 30.0, size=700), rng=rng)
    with numeric_grpc_submitter(spec, confidence=0.8, batch_size=300) as submit:
        remote = submit(reports)
        survey = submit.client.get_survey(submit.surveys[0])
    assert remote == estimate_mean_from_reports(spec, reports, 0.8)  # every field
    assert (survey.reports, survey.questions[0].numeric.max) == (700, 30.0)
    assert mechanism_of(survey.questions[0]) == spec


def test_grpc_simulations_read_back_the_in_process_results() -> None:
    categorical = categorical_mechanism("olh", 3, 2.0)
    local = simulate_categorical(600, [0.5, 0.3, 0.2], categorical, repeats=2, seed=4)
    with categorical_grpc_submitter(categorical, confidence=0.95, method="clopper-pearson") as go:
        remote = simulate_categorical(
            600, [0.5, 0.3, 0.2], categorical, repeats=2, seed=4, submit=go
        )
    assert (go.reports_sent, len(go.surveys)) == (1200, 2)
    assert remote.first == local.first
    assert remote.per_option == local.per_option
    assert (remote.transport, local.transport) == ("grpc", "inprocess")
    numeric = numeric_mechanism("duchi", 0.0, 1.0, 1.0)
    local_mean = simulate_numeric(500, "beta:2,2", numeric, repeats=2, seed=8)
    with numeric_grpc_submitter(numeric, confidence=0.95) as send:
        remote_mean = simulate_numeric(500, "beta:2,2", numeric, repeats=2, seed=8, submit=send)
        with pytest.raises(RuntimeError, match="disagrees with the 500 reports sent: n=499"):
            simulate_numeric(500, "uniform", numeric, seed=1, submit=lambda y: send(y[1:]))
    assert remote_mean.first == local_mean.first
    assert remote_mean.mean_estimate_raw == local_mean.mean_estimate_raw
    assert send.summary()["reports_sent"] == 1499


def test_kind_submitters_validate_their_options() -> None:
    grr = categorical_mechanism("grr", 3, 1.0)
    duchi = numeric_mechanism("duchi", 0.0, 1.0, 1.0)
    cases: list[tuple[Any, str]] = [
        (lambda: categorical_grpc_submitter(grr, options=["a"], confidence=0.9, method="wald"),
         r"need k=3 option names, got 1"),
        (lambda: categorical_grpc_submitter(duchi, confidence=0.9, method="wald"),  # type: ignore[arg-type]
         "spec must be a categorical spec"),
        (lambda: numeric_grpc_submitter(grr, confidence=0.9),  # type: ignore[arg-type]
         "spec must be a numeric spec"),
        (lambda: numeric_grpc_submitter(duchi, confidence=0.9, batch_size=10_001),
         r"batch_size must be in 1\.\.10000, got 10001"),
        (lambda: numeric_grpc_submitter(duchi, confidence=0.9, server="127.0.0.1:1"),
         "needs the admin token"),
    ]  # fmt: skip
    for make, message in cases:
        with pytest.raises((ValueError, TypeError), match=message), make():
            pass


# --- the CLI ------------------------------------------------------------------------------

CATEGORICAL = [
    "simulate", "--type", "categorical", "--options", "a,b,c", "--distribution", "0.5,0.3,0.2",
    "--epsilon", "1", "--participants", "4000", "--transport", "inprocess",
]  # fmt: skip
NUMERIC = [
    "simulate", "--type", "numeric", "--min", "0", "--max", "100", "--distribution",
    "beta:2,5", "--epsilon", "1", "--participants", "4000", "--transport", "inprocess",
]  # fmt: skip


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def test_simulate_categorical_json_is_one_document(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", *CATEGORICAL, "--repeats", "20", "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # progress went to stderr
    assert data["type"] == "categorical"
    assert data["options"] == ["a", "b", "c"]
    assert data["estimate"]["n"] == 4000
    assert data["mechanism"]["mechanism"] == "grr"  # auto: 3 < 3e + 2
    assert data["repeats"] == 20
    assert data["randomness"] == "seeded-pcg64"
    rows = data["per_option"]
    assert [row["share"] for row in rows] == [0.5, 0.3, 0.2]
    assert all(0.0 <= row["coverage"] <= 1.0 for row in rows)
    assert all(row["variance_theory"] > 0 for row in rows)
    assert 0.0 <= data["joint_coverage"] <= 1.0
    assert 0.0 <= data["simultaneous_coverage"] <= 1.0
    assert len(data["simultaneous_mean_width"]) == 3


def test_simulate_categorical_text_is_a_table(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", *CATEGORICAL, "--mechanism", "oue", "--repeats", "30")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Simulated 4,000 participants choosing among 3 options (randomness: os-csprng)" in out
    assert "Mechanism: oue (optimized unary encoding)" in out
    assert "Privacy: epsilon = 1.0000 per answer (exact)" in out
    assert "option    true  sample  estimate" in out
    assert "Over 30 repeats" in out
    assert "coverage ± MC SE" in out
    # The OS CSPRNG: in 30 repeats every option may be covered every time (1.0000), so the
    # line's shape is checked, not its value.
    assert re.search(r"All 3 options covered at once: per-option intervals [01]\.\d{4} ± ", out)
    assert "; simultaneous intervals (--simultaneous) " in out
    for name in ("a", "b", "c"):
        assert f"\n  {name} " in out


def test_simulate_numeric_json_and_text(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", *NUMERIC, "--repeats", "10", "--seed", "4", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["type"] == "numeric"
    assert data["distribution"] == "beta:2,5"
    assert data["true_mean"] == pytest.approx(100 * 2 / 7)
    assert data["estimate"]["n"] == 4000
    assert data["estimate"]["method"] == "clopper-pearson"  # Duchi: exact at every n
    assert data["methods"] == {"clopper-pearson": 10}
    assert data["mechanism"]["mechanism"] == "duchi"  # auto: the least worst-case variance
    assert data["variance_theory"] > 0
    assert 0.0 <= data["coverage"] <= 1.0
    text = run_cli("deniable-aggregator", *NUMERIC, "--mechanism", "hybrid", "--repeats", "10")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "values on [0, 100] from beta:2,5 (true mean 28.5714" in out
    assert "Mechanism: hybrid" in out
    assert "95% CI: [" in out
    assert "Over 10 repeats:" in out
    assert "CI coverage" in out
    assert "variance" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*CATEGORICAL, "--server", "127.0.0.1:1"], "--server needs --transport grpc"),
        ([*NUMERIC[:-2], "--batch-size", "0"], "batch_size must be in 1..10000, got 0"),
        (
            [*NUMERIC[:-2], "--server", "127.0.0.1:1"],
            "need --admin-token-file or DENIABLE_AGGREGATOR_ADMIN",
        ),
        ([*CATEGORICAL[:6], "0.5,0.6,-0.1", *CATEGORICAL[7:]], "share 2 must be a finite"),
        ([*CATEGORICAL[:6], "0.5,0.3", *CATEGORICAL[7:]], "one share per option (k=3), got 2"),
        ([*CATEGORICAL[:6], "0.5,0.3,0.3", *CATEGORICAL[7:]], "must sum to 1 (within 1e-9)"),
        ([*CATEGORICAL[:6], "0.5,x,0.5", *CATEGORICAL[7:]], "'x' is not a number"),
        ([*CATEGORICAL[:4], "a,b,a", *CATEGORICAL[5:]], "got 'a' twice"),
        ([*CATEGORICAL, "--p", "0.3"], "--p does not apply to --type categorical"),
        (
            [*CATEGORICAL, "--mechanism", "rappor"],
            "--mechanism rappor does not apply to --type categorical",
        ),
        ([*NUMERIC[:8], "beta:0,1", *NUMERIC[9:]], "beta shapes must be > 0"),
        ([*NUMERIC[:8], "constant:200", *NUMERIC[9:]], "constant value 200.0 is outside"),
        ([*NUMERIC[:8], "normal", *NUMERIC[9:]], "unknown distribution 'normal'"),
        ([*NUMERIC, "--alpha", "0.5"], "--alpha does not apply to --type numeric"),
        ([*NUMERIC, "--method", "wilson"], "--method does not apply to --type numeric"),
        (NUMERIC[:3] + NUMERIC[7:], "needs --min and --max"),
        ([*NUMERIC, "--repeats", "0"], "repeats must be >= 1, got 0"),
        (["simulate", "--participants", "10", "--alpha", "0.5"], "needs --p"),
        (
            ["simulate", "--participants", "10", "--p", "0.3", "--alpha", "0.5", "--options", "3"],
            "--options does not apply to --type binary",
        ),
    ],
)
def test_bad_simulate_input_exits_2_with_one_error_line(
    run_cli: RunCli, args: list[str], message: str
) -> None:
    done = run_cli("deniable-aggregator", *args, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
