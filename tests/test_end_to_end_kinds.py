"""Multiple-choice and numeric questions end to end: real daemon, console scripts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Daemon, RunCli
from tests.test_end_to_end import create, write_spec

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
    assert "a number in [0, 40], hybrid, epsilon = 1.0000 (exact)" in shown.stdout
    for os_answer, hours in [("Android", "12.5"), ("3", "40"), ("ios", "0")]:
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id,
            "--answer", f"os={os_answer}", "--answer", "os2=linux", "--answer", f"hours={hours}",
            "--answer", "late=no", "--yes", "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        sent = json.loads(done.stdout)
        assert sent["stored"] == 4
        by_question = {r["question_id"]: r for r in sent["reports"]}
        assert set(by_question["os"]) >= {"option", "mechanism", "epsilon", "alpha"}
        assert len(bytes.fromhex(by_question["os2"]["bits"])) == 1
        assert by_question["hours"]["mechanism"] == "hybrid"
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
    assert (hours["n"], hours["method"], hours["mechanism"]) == (3, "t", "hybrid")
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
