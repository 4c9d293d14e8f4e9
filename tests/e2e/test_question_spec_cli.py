"""``plan`` and ``simulate`` take the question as ``survey create`` does: ``--spec`` and options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RunCli

HOURS = {"id": "hours", "text": "Hours?", "type": "numeric", "min": 0, "max": 40, "epsilon": 1}
PICK = {"id": "pick", "text": "Which?", "type": "categorical", "options": ["a", "b", "c"],
        "mechanism": "oue", "epsilon": 2}  # fmt: skip


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    path = tmp_path / "survey.json"
    path.write_text(json.dumps({"title": "Study", "questions": [HOURS, PICK]}))
    return path


def test_a_spec_plans_as_the_same_options_do(run_cli: RunCli, survey: Path, tmp_path: Path) -> None:
    from_spec = run_cli("deniable-aggregator", "plan", "--spec", str(survey), "--question",
                        "pick", "--margin", "0.05", "--json")  # fmt: skip
    assert from_spec.returncode == 0, from_spec.stderr
    from_options = run_cli("deniable-aggregator", "plan", "--type", "categorical", "--options",
                           "a,b,c", "--mechanism", "oue", "--epsilon", "2", "--margin", "0.05",
                           "--json")  # fmt: skip
    assert json.loads(from_spec.stdout) == json.loads(from_options.stdout)
    assert json.loads(from_spec.stdout)["mechanism"] == "oue"
    one = tmp_path / "hours.json"  # one question's entry, without a survey around it
    one.write_text(json.dumps(HOURS))
    alone = run_cli("deniable-aggregator", "plan", "--spec", str(one), "--margin", "2", "--json")
    assert alone.returncode == 0, alone.stderr
    assert (json.loads(alone.stdout)["lo"], json.loads(alone.stdout)["hi"]) == (0.0, 40.0)


def test_a_spec_simulates(run_cli: RunCli, survey: Path) -> None:
    done = run_cli("deniable-aggregator", "simulate", "--spec", str(survey), "--question", "hours",
                   "--distribution", "constant:10", "--participants", "500", "--seed", "3",
                   "--transport", "inprocess", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["type"] == "numeric"
    assert data["true_mean"] == 10.0
    assert data["estimate"]["ci_low"] <= data["estimate"]["estimate"] <= data["estimate"]["ci_high"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "has 2 questions: give --question"),
        (["--question", "nope"], "has no question 'nope' (has: ['hours', 'pick'])"),
        (["--question", "pick", "--type", "numeric"], "--type does not apply to --spec"),
        (["--question", "pick", "--epsilon", "1"], "--epsilon does not apply to --spec"),
        (["--question", "hours", "--p", "0.3"], "--p does not apply to --type numeric"),
    ],
)
def test_a_bad_spec_is_a_usage_error_naming_it(
    run_cli: RunCli, survey: Path, args: list[str], message: str
) -> None:
    done = run_cli("deniable-aggregator", "plan", "--spec", str(survey), *args, "--margin", "2")
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_question_needs_a_spec(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", "plan", "--question", "q", "--epsilon", "1",
                   "--margin", "0.1")  # fmt: skip
    assert done.returncode == 2
    assert "--question needs --spec" in done.stderr
