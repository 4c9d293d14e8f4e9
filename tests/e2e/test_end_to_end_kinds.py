"""Multiple-choice and numeric questions end to end: real daemon, console scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ADMIN_TOKEN, Daemon, RunCli
from tests.e2e.test_end_to_end import create, reports_stored, write_spec


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test counts the reports it adds."""
    return shared_daemon


SPEC = {
    "title": "Study habits",
    "questions": [
        {"id": "os", "text": "Which OS do you use?", "type": "categorical",
         "options": ["iOS", "Android", "Linux"], "epsilon": 1.0},
        {"id": "os2", "text": "And at work?", "type": "categorical",
         "options": ["iOS", "Android", "Linux"], "mechanism": "oue", "epsilon": 1.0},
        {"id": "hours", "text": "Hours studied last week?", "type": "numeric",
         "min": 0, "max": 40, "epsilon": 1.0},
        {"id": "late", "text": "Were you late this week?", "alpha": 0.5},
    ],
}  # fmt: skip


def test_create_answer_estimate_every_kind(run_cli: RunCli, daemon: Daemon, tmp_path: Path) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    shown = run_cli("deniable-aggregator", "survey", "show", "--server", daemon.address, survey_id)
    assert "one of [iOS, Android, Linux], grr, epsilon = 1.0000 (exact)" in shown.stdout
    assert "one of [iOS, Android, Linux], oue" in shown.stdout
    assert "a number in [0, 40], duchi, epsilon = 1.0000 (exact)" in shown.stdout
    answers = [("Android", "12.5"), ("3", "40"), ("ios", "0")]
    for participant, (os_answer, hours) in enumerate(answers):
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id,
            "--answer", f"os={os_answer}", "--answer", "os2=linux", "--answer", f"hours={hours}",
            "--answer", "late=no", "--yes", "--json",
            env={"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        sent = json.loads(done.stdout)
        assert sent["stored"] == 4
        by_question = {r["question_id"]: r for r in sent["reports"]}
        assert set(by_question["os"]) >= {"option", "mechanism", "epsilon", "alpha"}
        assert len(bytes.fromhex(by_question["os2"]["bits"])) == 1
        assert by_question["hours"]["mechanism"] == "duchi"  # auto
        assert -5 < by_question["hours"]["number"] < 5  # the normalized scale, never the truth
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    estimates = {e["question_id"]: e for e in json.loads(done.stdout)["estimates"]}
    options = estimates["os"]["options"]
    assert [o["option"] for o in options] == ["iOS", "Android", "Linux"]
    assert sum(o["support"] for o in options) == 3  # GRR: one supported option per report
    assert abs(sum(o["estimate"] for o in options) - 1.0) < 1e-9
    hours = estimates["hours"]
    assert (hours["n"], hours["method"], hours["mechanism"]) == (3, "clopper-pearson", "duchi")
    assert hours["coverage"].startswith("fixed n; at least 95% for every population")
    assert 0.0 <= hours["ci_low"] <= hours["estimate"] <= hours["ci_high"] <= 40.0
    assert hours["std_error_worst"] > 0
    text = run_cli("deniable-aggregator", "estimate", "--server", daemon.address, survey_id)
    assert "  Android" in text.stdout
    assert "worst-case std err" in text.stdout


def test_answers_out_of_range_are_usage_errors(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    base = ["deniable", "answer", "--server", daemon.address, survey_id, "--yes",
            "--answer", "os2=1", "--answer", "late=yes"]  # fmt: skip
    cases = [
        (["--answer", "os=Windows", "--answer", "hours=3"], "answer must be an option name or "
         "its number 1..3, got 'Windows'"),
        (["--answer", "os=0", "--answer", "hours=3"], "got '0'"),
        (["--answer", "os=1", "--answer", "hours=41"], "answer must be a number from 0.0 to "
         "40.0, got '41'"),
        (["--answer", "os=1", "--answer", "hours=nan"], "got 'nan'"),
        (["--answer", "os=1"], "no answer for question 'hours'; pass --answer hours=VALUE "
         "(a number from 0.0 to 40.0)"),
    ]  # fmt: skip
    for extra, message in cases:
        done = run_cli(*base, *extra)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert "Traceback" not in done.stderr
    shown = run_cli("deniable-aggregator", "survey", "show", "--server", daemon.address,
                    survey_id, "--json")  # fmt: skip
    assert json.loads(shown.stdout).get("reports", "0") in (0, "0")


def test_invalid_specs_are_usage_errors(run_cli: RunCli, daemon: Daemon, tmp_path: Path) -> None:
    bad = [
        ({"id": "q", "text": "t", "type": "categorical", "options": ["a", "b"], "alpha": 0.5,
          "mechanism": "oue"}, "alpha=0.5 applies only to kind 'grr'"),
        ({"id": "q", "text": "t", "type": "numeric", "min": 5, "max": 1, "epsilon": 1},
         "spec.questions[0]:"),
        ({"id": "q", "text": "t", "type": "numeric", "min": 0, "max": 1}, "'epsilon' is required"),
        ({"id": "q", "text": "t", "type": "ranking"}, "spec.questions[0].type: expected one of"),
        ({"id": "q", "text": "t", "type": "numeric", "min": 0, "max": 1, "epsilon": 1,
          "options": []}, "unknown keys for a numeric question ['options']"),
    ]  # fmt: skip
    for question, message in bad:
        spec = write_spec(tmp_path, {"title": "T", "questions": [question]})
        done = run_cli(
            "deniable-aggregator", "survey", "create", "--server", daemon.address,
            "--admin-token-file", str(daemon.token_file), str(spec),
        )  # fmt: skip
        assert done.returncode == 2, (question, done.stderr)
        assert message in done.stderr, done.stderr


SIMULATE = {
    "categorical": ["--options", "yes,no,maybe", "--distribution", "0.5,0.3,0.2",
                    "--mechanism", "olh", "--epsilon", "1"],
    "numeric": ["--min", "0", "--max", "40", "--distribution", "beta:2,5",
                "--mechanism", "laplace", "--epsilon", "1"],
}  # fmt: skip


@pytest.mark.parametrize("kind", ["categorical", "numeric"])
def test_simulate_kinds_over_grpc_json(run_cli: RunCli, kind: str) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--type", kind, *SIMULATE[kind],
        "--participants", "1500", "--repeats", "2", "--seed", "9", "--transport", "grpc",
        "--batch-size", "400", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # exactly one document; progress went to stderr
    assert (data["type"], data["transport"], data["repeats"]) == (kind, "grpc", 2)
    assert data["grpc"]["embedded"] is True
    assert data["grpc"]["address"].startswith("127.0.0.1:")
    assert data["grpc"]["batch_size"] == 400
    assert data["grpc"]["reports_sent"] == 3000
    assert data["grpc"]["reports_per_second"] > 0
    estimate = data["estimate"]
    assert estimate["n"] == 1500
    assert estimate["epsilon"] == pytest.approx(1.0)
    if kind == "categorical":
        assert estimate["mechanism"] == "olh"
        assert len(estimate["estimate"]) == len(estimate["support_counts"]) == 3
        assert sum(estimate["estimate"]) == pytest.approx(1.0)
        assert [row["option"] for row in data["per_option"]] == ["yes", "no", "maybe"]
    else:
        assert (estimate["mechanism"], estimate["method"]) == ("laplace", "t")
        assert 0.0 <= estimate["ci_low"] <= estimate["estimate"] <= estimate["ci_high"] <= 40.0
        assert estimate["std_error_worst"] > 0
    inprocess = run_cli(
        "deniable-aggregator", "simulate", "--type", kind, *SIMULATE[kind],
        "--participants", "1500", "--repeats", "2", "--seed", "9", "--transport", "inprocess",
        "--json",
    )  # fmt: skip
    assert inprocess.returncode == 0, inprocess.stderr
    local = json.loads(inprocess.stdout)
    assert local["grpc"] is None
    assert local["estimate"] == estimate  # same seed: the same reports, the same estimate


def test_simulate_kinds_against_a_running_daemon(run_cli: RunCli, daemon: Daemon) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    done = run_cli(
        "deniable-aggregator", "simulate", "--type", "numeric", *SIMULATE["numeric"],
        "--participants", "800", "--server", daemon.address, "--batch-size", "300",
        env={"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"Transport: gRPC to the daemon at {daemon.address}, 800 reports" in done.stdout
    categorical = run_cli(
        "deniable-aggregator", "simulate", "--type", "categorical", *SIMULATE["categorical"],
        "--participants", "700", "--server", daemon.address,
        "--admin-token-file", str(daemon.token_file), "--json",
    )  # fmt: skip
    assert categorical.returncode == 0, categorical.stderr
    assert json.loads(categorical.stdout)["grpc"]["embedded"] is False
    assert reports_stored(daemon) - stored_before == 1500
    no_token = run_cli(
        "deniable-aggregator", "simulate", "--type", "categorical", *SIMULATE["categorical"],
        "--participants", "10", "--server", daemon.address,
    )  # fmt: skip
    assert no_token.returncode == 2
    assert "DENIABLE_AGGREGATOR_ADMIN_TOKEN" in no_token.stderr
