"""The console scripts, run in subprocesses: output, --json, exit codes, environment."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deniable.aggregator import participants_needed
from deniable.shared import RandomizedResponse
from tests.conftest import RunCli


def test_plan_json_is_one_document_matching_the_library(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", "plan", "--epsilon", "1", "--margin", "0.03", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    spec = RandomizedResponse.from_epsilon(1.0)
    assert data["participants"] == participants_needed(0.03, spec)
    assert data["epsilon"] == 1.0
    assert data["alpha"] == spec.alpha
    assert data["margin"] <= 0.03


def test_plan_text_for_participants_gives_the_margin(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "plan", "--alpha", "0.5", "--participants", "10000", "--p", "0.3"
    )
    assert done.returncode == 0, done.stderr
    assert "Margin achieved: ±0.0192 with 10,000 participants" in done.stdout
    assert "epsilon = 1.0986 (exact" in done.stdout
    assert "approximation 2*alpha = 1.0000 understates it" in done.stdout


def test_options_are_read_from_deniable_environment_variables(run_cli: RunCli) -> None:
    env = {"DENIABLE_AGGREGATOR_PLAN_EPSILON": "1", "DENIABLE_AGGREGATOR_PLAN_MARGIN": "0.03"}
    done = run_cli("deniable-aggregator", "plan", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["participants"] == participants_needed(
        0.03, RandomizedResponse.from_epsilon(1.0)
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "--alpha", "0.5", "--epsilon", "1", "--margin", "0.1"], "exactly one of --alpha"),
        (["plan", "--margin", "0.1"], "exactly one of --alpha or --epsilon"),
        (["plan", "--alpha", "0.5"], "exactly one of --margin or --participants"),
        (["plan", "--alpha", "0.5", "--margin", "0"], r"margin must be in (0, 1], got 0.0"),
        (["plan", "--alpha", "1.5", "--margin", "0.1"], "alpha must be in (0, 1], got 1.5"),
        (["plan", "--epsilon", "-1", "--margin", "0.1"], "epsilon must be a finite number > 0"),
        (["plan", "--alpha", "nan", "--margin", "0.1"], "alpha must be a finite number, got nan"),
        (["simulate", "--participants", "0", "--p", "0.3", "--alpha", "0.5"], "participants must"),
        (["simulate", "--participants", "10", "--p", "2", "--alpha", "0.5"], "p must be in [0, 1]"),
        (
            ["simulate", "--participants", "10", "--p", "0.3", "--alpha", "0.5", "--method", "x"],
            "x",
        ),
        (["simulate", "--p", "0.3", "--alpha", "0.5"], "--participants"),
        (
            ["estimate", "0123456789abcdef", "--confidence", "0.9999999999999999"],
            "confidence must be in (0, 0.999999999] (at most 1 - 1e-9), got 0.9999999999999999",
        ),
        (
            ["plan", "--epsilon", "1", "--margin", "0.05", "--confidence", "0.9999999999999999"],
            "confidence must be at most 1 - 1e-9 (0.999999999), got 0.9999999999999999",
        ),
        (
            [
                "simulate",
                "--participants",
                "100",
                "--p",
                "0.3",
                "--alpha",
                "0.5",
                "--transport",
                "inprocess",
                "--confidence",
                "0.9999999999999999",
            ],
            "confidence must be at most 1 - 1e-9",
        ),
    ],
)
def test_invalid_input_exits_2_with_one_line_and_no_stdout(
    run_cli: RunCli, args: list[str], message: str
) -> None:
    done = run_cli("deniable-aggregator", *args, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ({"type": "binary", "epsilon": 1e-4},
         "spec.questions[0].mechanism: epsilon 0.0001 of randomized_response (alpha "),
        ({"type": "categorical", "options": ["a", "b", "c"], "mechanism": "oue", "epsilon": 1e-5},
         "spec.questions[0].mechanism: epsilon 9.99999999"),
        ({"type": "numeric", "min": 0, "max": 40, "mechanism": "piecewise", "epsilon": 0.001},
         "is below the minimum 0.001 (an estimate's variance grows as 1/epsilon^2); the "
         "mechanism certified at the requested epsilon 0.001 comes out just below it"),
        ({"type": "numeric", "min": -1e16, "max": 40, "epsilon": 1.0},
         "spec.questions[0].numeric.min: -1e+16 is beyond ±1e+15"),
    ],
    ids=["binary", "oue", "piecewise-at-the-minimum", "wide-range"],
)  # fmt: skip
def test_survey_create_refuses_the_daemons_limits_before_sending(
    run_cli: RunCli, tmp_path: Path, question: dict[str, object], message: str
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"title": "T", "questions": [{"id": "q", "text": "t", **question}]}))
    # Refused before the admin token is read or the (unreachable) server is called.
    done = run_cli("deniable-aggregator", "survey", "create", "--server", "127.0.0.1:9", str(spec))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    assert message in errors[0]
    assert "is below the minimum 0.001" in errors[0] or "beyond" in errors[0]


def test_simulate_json_has_the_estimate_with_contract_fields(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--participants", "5000", "--p", "0.3",
        "--epsilon", "1", "--repeats", "20", "--seed", "3", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # progress went to stderr, stdout is one document
    estimate = data["estimate"]
    assert estimate["n"] == 5000
    assert estimate["method"] == "clopper-pearson"
    assert estimate["epsilon"] == 1.0
    assert estimate["ci_low"] <= estimate["estimate"] <= estimate["ci_high"]
    assert data["repeats"] == 20
    assert data["randomness"] == "seeded-pcg64"
    assert 0.0 <= data["coverage"] <= 1.0
    assert data["std_theory"] > 0


def test_simulate_text_shows_truth_estimate_interval_and_exact_epsilon(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--participants", "10000", "--p", "0.3",
        "--alpha", "0.5", "--repeats", "50", "--method", "wilson", "--transport", "inprocess",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "true share p = 0.3" in out
    assert "randomness: os-csprng" in out
    assert "epsilon = 1.0986 (exact" in out
    assert "95% CI: [" in out
    assert "(wilson; estimand: population share" in out
    assert "Over 50 repeats:" in out
    assert "CI coverage:" in out


def test_no_privacy_is_null_epsilon_in_json(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", "plan", "--alpha", "1", "--margin", "0.1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["epsilon"] is None


def test_participant_explain(run_cli: RunCli) -> None:
    done = run_cli("deniable", "explain", "--alpha", "0.5")
    assert done.returncode == 0, done.stderr
    assert "probability 75%" in done.stdout
    data = json.loads(run_cli("deniable", "explain", "--epsilon", "1", "--json").stdout)
    assert data["epsilon"] == 1.0
    assert math.isclose(data["alpha"], math.tanh(0.5), rel_tol=1e-15)
    none = json.loads(run_cli("deniable", "explain", "--alpha", "1", "--json").stdout)
    assert none["epsilon"] is None
    assert none["private"] is False
    bad = run_cli("deniable", "explain", "--alpha", "0")
    assert bad.returncode == 2
    assert "alpha must be in (0, 1], got 0.0" in bad.stderr


def test_version_and_help(run_cli: RunCli) -> None:
    for script in ("deniable", "deniable-aggregator"):
        done = run_cli(script, "--version")
        assert done.returncode == 0
        assert "0.1.0" in done.stdout
    helptext = run_cli("deniable-aggregator", "--help").stdout
    assert "DENIABLE_" in helptext
    assert "Exit codes" in helptext
