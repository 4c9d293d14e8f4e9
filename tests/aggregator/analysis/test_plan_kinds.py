"""Planning multiple-choice and numeric questions: minimal sample sizes, auto's choice, CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest
from scipy import stats

from deniable.aggregator.analysis.planning._compared import plan_categorical, plan_numeric
from deniable.aggregator.analysis.planning._sample_size import margin_achieved_by, participants_for
from deniable.shared.mechanisms import DuchiMechanism, GeneralizedRandomizedResponse
from deniable.shared.questions import (
    categorical_mechanism,
    choose_categorical,
    numeric_mechanism,
)
from tests.conftest import RunCli


def z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


# --- categorical: the smallest n, from the spec's own variance --------------------------


@pytest.mark.parametrize("kind", ["grr", "oue", "olh"])
@pytest.mark.parametrize(
    ("k", "epsilon", "margin", "confidence", "p"),
    [
        (3, 1.0, 0.03, 0.95, None),
        (10, 0.5, 0.05, 0.99, None),
        (40, 2.0, 0.02, 0.9, 0.1),
        (5, 4.0, 0.01, 0.95, 0.0),
        (2, 1.0, 0.5, 0.95, None),
    ],
)
def test_categorical_participants_is_the_smallest_n_meeting_the_margin(
    kind: str, k: int, epsilon: float, margin: float, confidence: float, p: float | None
) -> None:
    spec = categorical_mechanism(kind, k, epsilon)
    n = participants_for(margin, spec, confidence, p)
    one = spec.worst_variance(1) if p is None else spec.variance(p, 1)
    assert n == max(1, math.ceil(z(confidence) ** 2 * one / margin**2))
    assert margin_achieved_by(n, spec, confidence, p) <= margin
    if n > 1:
        assert margin_achieved_by(n - 1, spec, confidence, p) > margin


@pytest.mark.parametrize(("k", "epsilon"), [(5, 1.0), (30, 1.0), (4, 2.0), (200, 3.0)])
def test_small_share_variance_matches_the_published_formulas(k: int, epsilon: float) -> None:
    # n·Var at small f (Wang et al., USENIX Security 2017): GRR (k−2+e^ε)/(e^ε−1)²,
    # OUE 4e^ε/(e^ε−1)²; at p = 0 the population and respondents variances agree.
    e = math.exp(epsilon)
    plan = plan_categorical(k, epsilon=epsilon, participants=1000, p=0.0)
    rows = {row.mechanism: row for row in plan.mechanisms}
    assert rows["grr"].variance_one == pytest.approx((k - 2 + e) / (e - 1) ** 2, rel=1e-9)
    assert rows["oue"].variance_one == pytest.approx(4 * e / (e - 1) ** 2, rel=1e-9)
    # OLH with the integer g = round(e^ε) + 1 is close to OUE (exactly 4e^ε/(e^ε−1)² only for
    # real-valued g = e^ε + 1).
    assert rows["olh"].variance_one == pytest.approx(4 * e / (e - 1) ** 2, rel=0.1)


@pytest.mark.parametrize(
    ("k", "epsilon"),
    [(2, 0.1), (10, 1.0), (11, 1.0), (12, 1.0), (20, 2.0), (25, 2.0), (1024, 5.0), (300, 5.0)],
)
def test_auto_choice_is_what_choose_categorical_picks(k: int, epsilon: float) -> None:
    plan = plan_categorical(k, epsilon=epsilon, margin=0.05)
    assert plan.auto_choice == choose_categorical(k, epsilon).name
    assert plan.mechanism == plan.auto_choice  # mechanism="auto" selects it
    assert [row.mechanism for row in plan.mechanisms] == ["grr", "oue", "olh"]
    chosen = next(row for row in plan.mechanisms if row.mechanism == plan.mechanism)
    assert (plan.participants, plan.margin) == (chosen.participants, chosen.margin)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 20.0])
def test_auto_choice_is_the_row_needing_fewest_participants(epsilon: float) -> None:
    # One rule: the planner's auto_choice is the row with the least worst-case Var₁, and
    # so needs the fewest participants for any margin (ties: the earlier in auto's order).
    plans = [plan_categorical(k, epsilon=epsilon, margin=0.02) for k in (2, 4, 9, 40, 1024)]
    plans += [plan_numeric(lo, hi, epsilon=epsilon, margin=0.01 * (hi - lo))
              for lo, hi in ((0.0, 1.0), (-50.0, 150.0))]  # fmt: skip
    for plan in plans:
        best = min(row.variance_one for row in plan.mechanisms)
        rows = {row.mechanism: row for row in plan.mechanisms}
        assert rows[plan.auto_choice].variance_one == best
        assert rows[plan.auto_choice].participants == min(r.participants for r in rows.values())
        assert plan.mechanism == plan.auto_choice  # mechanism="auto" plans auto's choice


def test_every_categorical_row_is_its_own_minimal_plan() -> None:
    plan = plan_categorical(8, epsilon=1.0, mechanism="oue", margin=0.03, confidence=0.9)
    assert plan.mechanism == "oue"
    assert plan.requested == "oue"
    assert plan.auto_choice == "oue"  # at ε = 1, k = 8: the least worst-case variance
    for row in plan.mechanisms:
        spec = categorical_mechanism(row.mechanism, 8, 1.0)
        assert row.parameters == spec.describe()
        assert row.variance_one == spec.worst_variance(1)
        assert row.participants == participants_for(0.03, spec, 0.9)
        assert row.margin == margin_achieved_by(row.participants, spec, 0.9)
        assert row.margin <= 0.03
    assert plan.target_margin == 0.03
    assert "normal approximation" in plan.method


def test_margin_for_participants_is_z_sqrt_var_over_n() -> None:
    plan = plan_categorical(6, epsilon=1.0, participants=10_000, p=0.3, confidence=0.95)
    assert plan.share == 0.3
    for row in plan.mechanisms:
        assert row.participants == 10_000
        spec = categorical_mechanism(row.mechanism, 6, 1.0)
        expected = z(0.95) * math.sqrt(spec.variance(0.3, 1) / 10_000)
        assert row.margin == pytest.approx(expected, rel=1e-12)


def test_alpha_plans_grr_and_compares_the_others_at_its_epsilon() -> None:
    plan = plan_categorical(40, alpha=0.5, mechanism="grr", margin=0.05)
    grr = GeneralizedRandomizedResponse(40, 0.5)
    rows = {row.mechanism: row for row in plan.mechanisms}
    assert rows["grr"].parameters == grr.describe()
    assert rows["oue"].parameters == categorical_mechanism("oue", 40, grr.epsilon).describe()
    assert plan.auto_choice == choose_categorical(40, grr.epsilon).name
    assert plan.participants == participants_for(0.05, grr)


def test_no_privacy_plans_grr_alone() -> None:
    plan = plan_categorical(3, alpha=1.0, mechanism="grr", margin=0.05, p=0.5)
    assert [row.mechanism for row in plan.mechanisms] == ["grr"]
    assert plan.mechanisms[0].epsilon == math.inf
    # α = 1: a plain poll, Var₁ = p(1−p).
    assert plan.participants == math.ceil(z(0.95) ** 2 * 0.25 / 0.05**2)


# --- numeric ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["laplace", "duchi", "piecewise", "hybrid"])
@pytest.mark.parametrize(
    ("lo", "hi", "epsilon", "margin", "confidence"),
    [(0.0, 100.0, 1.0, 2.0, 0.95), (-1.0, 1.0, 0.5, 0.05, 0.99), (18.0, 90.0, 4.0, 40.0, 0.9)],
)
def test_numeric_participants_is_the_smallest_n_meeting_the_margin(
    kind: str, lo: float, hi: float, epsilon: float, margin: float, confidence: float
) -> None:
    spec = numeric_mechanism(kind, lo, hi, epsilon)
    n = participants_for(margin, spec, confidence, mean=True)
    one = spec.variance_x(1)
    assert n == max(1, math.ceil(z(confidence) ** 2 * one / margin**2))
    assert margin_achieved_by(n, spec, confidence) <= margin
    if n > 1:
        assert margin_achieved_by(n - 1, spec, confidence) > margin


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_numeric_plan_compares_every_mechanism_and_reports_auto(epsilon: float) -> None:
    plan = plan_numeric(0.0, 100.0, epsilon=epsilon, margin=2.0)
    assert plan.auto_choice == numeric_mechanism("auto", 0.0, 100.0, epsilon).name
    assert plan.mechanism == plan.auto_choice
    assert [row.mechanism for row in plan.mechanisms] == ["laplace", "duchi", "piecewise", "hybrid"]
    for row in plan.mechanisms:
        spec = numeric_mechanism(row.mechanism, 0.0, 100.0, epsilon)
        assert row.variance_one == spec.variance_x(1)
        assert row.participants == participants_for(2.0, spec, mean=True)
    assert (plan.lo, plan.hi, plan.k, plan.share) == (0.0, 100.0, None, None)


def test_numeric_margin_is_in_x_units() -> None:
    # The same question on a range 100x wider needs a 100x wider margin for the same n.
    narrow = plan_numeric(0.0, 1.0, epsilon=1.0, mechanism="duchi", margin=0.02)
    wide = plan_numeric(0.0, 100.0, epsilon=1.0, mechanism="duchi", margin=2.0)
    assert narrow.participants == wide.participants
    spec = DuchiMechanism.from_epsilon(0.0, 100.0, 1.0)  # what mechanism="duchi" builds
    # Duchi: Var₁ = B²·(range/2)² for every distribution's worst case.
    assert wide.mechanisms[1].variance_one == pytest.approx(spec.bound**2 * 50.0**2, rel=1e-12)
    assert wide.mechanism == "duchi"
    assert wide.requested == "duchi"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plan_categorical(3, epsilon=1.0, margin=0.0), ValueError, "got 0.0"),
        (lambda: plan_categorical(3, epsilon=1.0, margin=1.5), ValueError, r"\(0, 1\], got 1.5"),
        (lambda: plan_categorical(3, epsilon=1.0, margin=math.nan), ValueError, "got nan"),
        (lambda: plan_categorical(3, epsilon=1.0), ValueError, "exactly one of margin"),
        (
            lambda: plan_categorical(3, epsilon=1.0, margin=0.1, participants=9),
            ValueError,
            "exactly one of margin",
        ),
        (lambda: plan_categorical(3, epsilon=1.0, participants=0), ValueError, "got 0"),
        (lambda: plan_categorical(1, epsilon=1.0, margin=0.1), ValueError, "k must be between"),
        (
            lambda: plan_categorical(3, epsilon=1.0, mechanism="rappor", margin=0.1),
            ValueError,
            "unknown kind 'rappor'",
        ),
        (
            lambda: plan_categorical(3, alpha=0.5, mechanism="oue", margin=0.1),
            ValueError,
            "alpha=0.5 applies only to kind 'grr'",
        ),
        (lambda: plan_categorical(3, epsilon=1.0, margin=0.1, p=1.2), ValueError, "got 1.2"),
        (
            lambda: plan_categorical(3, epsilon=1.0, margin=0.1, confidence=1.0),
            ValueError,
            "confidence must be strictly between 0 and 1, got 1.0",
        ),
        (lambda: plan_numeric(0.0, 1.0, epsilon=1.0, margin=-1.0), ValueError, "got -1.0"),
        (lambda: plan_numeric(0.0, 1.0, epsilon=1.0, margin=math.inf), ValueError, "got inf"),
        (lambda: plan_numeric(1.0, 0.0, epsilon=1.0, margin=0.1), ValueError, "lo must be < hi"),
        (
            lambda: plan_numeric(0.0, 1.0, epsilon=1.0, mechanism="gauss", margin=0.1),
            ValueError,
            "unknown kind 'gauss' of a numeric question",
        ),
        (lambda: plan_numeric(0.0, 1.0, epsilon=99.0, margin=0.1), ValueError, "got 99.0"),
    ],
)
def test_invalid_plans_raise_naming_the_value(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()


# --- the CLI ------------------------------------------------------------------------------


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def test_plan_categorical_json_is_one_document_matching_the_library(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "plan", "--type", "categorical", "--options", "8",
        "--epsilon", "1", "--margin", "0.03", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    expected = plan_categorical(8, epsilon=1.0, margin=0.03)
    assert data["type"] == "categorical"
    assert data["participants"] == expected.participants
    assert data["auto_choice"] == expected.auto_choice == "oue"
    assert [row["participants"] for row in data["mechanisms"]] == [
        row.participants for row in expected.mechanisms
    ]
    assert data["share"] is None
    assert "normal approximation" in data["method"]


def test_plan_categorical_text_shows_every_mechanism(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "plan", "--type", "categorical", "--options", "red,green,blue",
        "--epsilon", "1", "--mechanism", "olh", "--participants", "5000", "--p", "0.2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "with 5,000 participants at 95% confidence" in out
    assert "3 options, assumed share p = 0.2" in out
    for kind in ("grr", "oue", "olh"):
        assert f"\n  {kind} " in out
    assert "<- selected" in out
    assert "<- auto's choice" in out
    assert "Selected: olh (optimized local hashing)" in out
    assert "auto would choose grr" in out
    assert "Privacy: epsilon = 1.0000 per answer (exact)" in out
    assert "normal approximation" in out


def test_plan_numeric_json_and_text(run_cli: RunCli) -> None:
    args = ["plan", "--type", "numeric", "--min", "0", "--max", "100", "--epsilon", "1"]
    done = run_cli("deniable-aggregator", *args, "--margin", "2", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    expected = plan_numeric(0.0, 100.0, epsilon=1.0, margin=2.0)
    assert data["type"] == "numeric"
    assert data["participants"] == expected.participants
    assert data["auto_choice"] == "duchi"
    assert [row["mechanism"] for row in data["mechanisms"]] == [
        "laplace", "duchi", "piecewise", "hybrid",
    ]  # fmt: skip
    text = run_cli("deniable-aggregator", *args, "--margin", "2")
    assert text.returncode == 0, text.stderr
    assert "margin of ±2 on the mean (x units on [0, 100], worst-case values)" in text.stdout
    assert f"{expected.participants:,}" in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--type", "categorical", "--epsilon", "1", "--margin", "0.1"], "needs --options"),
        (
            ["--type", "categorical", "--options", "1", "--epsilon", "1", "--margin", "0.1"],
            "k must be between 2 and 1024 options, got 1",
        ),
        (
            ["--type", "categorical", "--options", "a,b,a", "--epsilon", "1", "--margin", "0.1"],
            "option names must be distinct, got 'a' twice",
        ),
        (
            ["--type", "categorical", "--options", "3", "--epsilon", "1", "--margin", "0.1",
             "--mechanism", "rappor"],
            "--mechanism rappor does not apply to --type categorical (expected one of: auto, grr",
        ),
        (
            ["--type", "categorical", "--options", "3", "--alpha", "0.5", "--margin", "0.1",
             "--mechanism", "oue"],
            "alpha=0.5 applies only to kind 'grr', not 'oue'",
        ),
        (
            ["--type", "categorical", "--options", "3", "--epsilon", "1", "--margin", "2"],
            "margin must be in (0, 1], got 2.0",
        ),
        (
            ["--type", "categorical", "--options", "3", "--epsilon", "1", "--margin", "0.1",
             "--min", "0"],
            "--min does not apply to --type categorical",
        ),
        (["--type", "numeric", "--epsilon", "1", "--margin", "1"], "needs --min and --max"),
        (
            ["--type", "numeric", "--min", "5", "--max", "1", "--epsilon", "1", "--margin", "1"],
            "lo must be < hi, got lo=5.0, hi=1.0",
        ),
        (
            ["--type", "numeric", "--min", "0", "--max", "1", "--margin", "1"],
            "needs --epsilon",
        ),
        (
            ["--type", "numeric", "--min", "0", "--max", "1", "--epsilon", "1", "--margin", "1",
             "--p", "0.3"],
            "--p does not apply to --type numeric",
        ),
        (
            ["--type", "numeric", "--min", "0", "--max", "1", "--epsilon", "1", "--margin", "-2"],
            "margin must be a finite number > 0, got -2.0",
        ),
        (["--alpha", "0.5", "--margin", "0.1", "--options", "3"], "--options does not apply"),
        (["--type", "ordinal", "--margin", "0.1"], "ordinal"),
    ],
)  # fmt: skip
def test_bad_plan_input_exits_2_with_one_error_line(
    run_cli: RunCli, args: list[str], message: str
) -> None:
    done = run_cli("deniable-aggregator", "plan", *args, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
