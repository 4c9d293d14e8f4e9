"""``synthesize`` end to end: real daemon, answers from ``deniable``, the CSV it writes."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, RunCli
from tests.e2e.test_end_to_end import create, write_spec


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): each test makes its own survey."""
    return shared_daemon


SPEC = {
    "title": "Habits",
    "questions": [
        {"id": "late", "text": "Were you late this week?", "epsilon": 8.0},
        {"id": "team", "text": "Your team?", "type": "categorical",
         "options": ["red", "green", "blue"], "epsilon": 8.0},
        {"id": "hours", "text": "Hours of sleep?", "type": "numeric", "min": 0, "max": 12,
         "epsilon": 8.0},
        {"id": "habits", "text": "About last term", "type": "joint", "epsilon": 8.0,
         "parts": [
             {"id": "cheated", "text": "Did you cheat on an exam?"},
             {"id": "copied", "text": "Did you copy homework?"},
         ]},
        {"id": "fruit", "text": "Which did you buy?", "type": "multi_select",
         "items": ["apples", "pears", "plums"], "epsilon": 12.0},
    ],
}  # fmt: skip
# Cheating goes with copying; apples with pears.
ANSWERS = [
    ("yes", "red", "7", "yes,yes", "apples,pears"),
    ("no", "green", "8", "no,no", "plums"),
    ("yes", "blue", "6", "yes,yes", "apples,pears,plums"),
    ("no", "red", "9", "no,no", "none"),
    ("no", "red", "5", "no,yes", "apples,pears"),
    ("yes", "green", "7.5", "yes,yes", "pears"),
    ("no", "blue", "8", "no,no", "plums"),
    ("no", "red", "6", "yes,no", "apples,pears"),
    ("yes", "green", "10", "no,no", "apples"),
    ("no", "red", "7", "no,no", "none"),
]
ROWS = 20_000
Z = 5.0  # sampling tolerance: Z binomial standard errors of ROWS rows


def answered_survey(run_cli: RunCli, daemon: Daemon, tmp_path: Path) -> str:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    for participant, (late, team, hours, habits, fruit) in enumerate(ANSWERS):
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id, "--yes",
            "--answer", f"late={late}", "--answer", f"team={team}",
            "--answer", f"hours={hours}", "--answer", f"habits={habits}",
            "--answer", f"fruit={fruit}", "--max-epsilon", "12", "--budget", "50",
            env={"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return survey_id


def synthesize(
    run_cli: RunCli, daemon: Daemon, survey_id: str, out: Path, *extra: str
) -> dict[str, Any]:
    done = run_cli(
        "deniable-aggregator", "synthesize", "--server", daemon.address, survey_id,
        "--rows", str(ROWS), "--out", str(out), "--json", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def read_columns(path: Path) -> dict[str, list[str]]:
    with path.open(newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    assert all(len(row) == len(header) for row in rows)
    return {name: [row[i] for row in rows] for i, name in enumerate(header)}


def share(values: list[bool]) -> float:
    return sum(values) / len(values)


def tolerance(p: float) -> float:
    """Z standard errors of a share p over ROWS rows (and rounding)."""
    return Z * math.sqrt(max(p * (1.0 - p), 0.0) / ROWS) + 1e-9


def assert_within(synthetic: float, row: dict[str, Any]) -> None:
    """Within the estimate's interval widened by sampling error, and near its point."""
    tol = tolerance(row["estimate"])
    assert row["ci_low"] - tol <= synthetic <= row["ci_high"] + tol, (synthetic, row)
    assert abs(synthetic - row["estimate"]) <= tol, (synthetic, row)


def correlation(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def test_the_synthetic_table_reproduces_the_estimates(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = answered_survey(run_cli, daemon, tmp_path)
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    estimates = {e["question_id"]: e for e in json.loads(done.stdout)["estimates"]}
    out = tmp_path / "synthetic.csv"
    result = synthesize(run_cli, daemon, survey_id, out, "--seed", "11")
    assert (result["file"], result["rows"], result["seed"]) == (str(out), ROWS, 11)
    assert "costs no privacy" in result["privacy"]
    assert "sampled independently" in result["independence"]
    methods = {c["name"]: c["method"] for c in result["columns"]}
    assert list(methods) == [
        "late", "team", "hours", "habits:cheated", "habits:copied",
        "fruit:apples", "fruit:pears", "fruit:plums",
    ]  # fmt: skip
    assert methods["late"].startswith("yes/no: Bernoulli(")
    assert "maximum-entropy distribution on [0, 12]" in methods["hours"]
    assert "drawn jointly" in methods["habits:cheated"]
    assert "iterative proportional fitting" in methods["fruit:apples"]
    columns = read_columns(out)
    assert set(columns) == set(methods)
    assert all(len(values) == ROWS for values in columns.values())

    assert set(columns["late"]) <= {"yes", "no"}
    assert_within(share([v == "yes" for v in columns["late"]]), estimates["late"])
    for option in estimates["team"]["options"]:
        assert_within(share([v == option["option"] for v in columns["team"]]), option)
    hours = [float(v) for v in columns["hours"]]
    assert min(hours) >= 0.0
    assert max(hours) <= 12.0
    mean = estimates["hours"]
    tol = Z * 6.0 / math.sqrt(ROWS)  # a standard deviation on [0, 12] is at most 6
    assert mean["ci_low"] - tol <= sum(hours) / ROWS <= mean["ci_high"] + tol
    assert abs(sum(hours) / ROWS - mean["estimate"]) <= tol

    habits = estimates["habits"]
    cheated = [v == "yes" for v in columns["habits:cheated"]]
    copied = [v == "yes" for v in columns["habits:copied"]]
    for cell in habits["options"]:  # "cheated=yes, copied=no"
        wanted = [part.split("=")[1] == "yes" for part in cell["option"].split(", ")]
        hits = [(a, b) == tuple(wanted) for a, b in zip(cheated, copied, strict=True)]
        assert_within(share(hits), cell)
    marginals = {m["part"]: m["values"] for m in habits["marginals"]}
    assert_within(share(cheated), marginals["cheated"][1])
    assert_within(share(copied), marginals["copied"][1])
    (pair,) = habits["associations"]
    rho = correlation([float(a) for a in cheated], [float(b) for b in copied])
    tol = Z / math.sqrt(ROWS)  # the sample correlation's standard error is at most ~1/√N
    assert pair["correlation_low"] - tol <= rho <= pair["correlation_high"] + tol
    assert abs(rho - pair["correlation"]) <= tol, (rho, pair)
    assert pair["correlation"] > 0.3  # the relationship is there to be kept

    fruit = estimates["fruit"]
    chosen = {item: [v == "1" for v in columns[f"fruit:{item}"]] for item in SPEC_ITEMS}
    for item in fruit["items"]:
        assert_within(share(chosen[item["item"]]), item)
    # Targets the synthesizer had to move (clipped to their bounds, or shrunk toward
    # independence when the pairs are not feasible together) are not its to match.
    moved = ("clipped", "toward independence")
    clipped = any(word in note for note in result["notes"] for word in moved)
    for pair in fruit["pairs"]:
        both = [a and b for a, b in zip(chosen[pair["first"]], chosen[pair["second"]], strict=True)]
        synthetic = share(both)
        tol = tolerance(pair["estimate"])
        assert pair["ci_low"] - tol <= synthetic <= pair["ci_high"] + tol, (synthetic, pair)
        if not clipped:
            assert abs(synthetic - pair["estimate"]) <= tol, (synthetic, pair)


SPEC_ITEMS = ["apples", "pears", "plums"]


def test_the_same_seed_writes_the_same_file(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = answered_survey(run_cli, daemon, tmp_path)
    first, second, other, fresh = (tmp_path / f"{name}.csv" for name in "abcd")
    synthesize(run_cli, daemon, survey_id, first, "--seed", "3")
    synthesize(run_cli, daemon, survey_id, second, "--seed", "3")
    assert first.read_bytes() == second.read_bytes()
    synthesize(run_cli, daemon, survey_id, other, "--seed", "4")
    assert other.read_bytes() != first.read_bytes()
    assert synthesize(run_cli, daemon, survey_id, fresh)["seed"] is None  # OS entropy
    assert fresh.read_bytes() != first.read_bytes()
    text = run_cli(
        "deniable-aggregator", "synthesize", "--server", daemon.address, survey_id,
        "--rows", "5", "--out", str(tmp_path / "e.csv"),
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert f"rows x 8 columns of Habits ({survey_id}) to {tmp_path / 'e.csv'}" in text.stdout
    assert "privacy: post-processing" in text.stdout
    assert "costs no privacy" in text.stdout
    assert "independence: columns of different questions are sampled independently" in (text.stdout)
    assert len(read_columns(tmp_path / "e.csv")["late"]) == 5
    again = run_cli(
        "deniable-aggregator", "synthesize", "--server", daemon.address, survey_id,
        "--rows", "5", "--out", str(first),
    )  # fmt: skip
    assert again.returncode == 2
    assert f"--out: {str(first)!r} exists; it is not overwritten" in again.stderr
    assert first.read_bytes() == second.read_bytes()  # left as it was


def test_bad_inputs_exit_with_a_message_and_write_nothing(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    work = tmp_path / "out"
    work.mkdir()
    out = work / "t.csv"
    base = ["deniable-aggregator", "synthesize", "--server", daemon.address]
    env = "(env var: 'DENIABLE_AGGREGATOR_SYNTHESIZE_"
    estimate = run_cli("deniable-aggregator", "estimate", "--server", daemon.address, "nosuch")
    assert estimate.returncode == 4
    cases = [
        (["nosuch", "--rows", "10", "--out", str(out)], 4, estimate.stderr.strip()),
        ([survey_id, "--rows", "10", "--out", str(out)], 5,
         "Error: failed precondition: "),  # no reports yet
        ([survey_id, "--rows", "0", "--out", str(out)], 2,
         f"'--rows' {env}ROWS'): 0 is not in the range 1<=x<=10000000"),
        ([survey_id, "--rows", "-3", "--out", str(out)], 2,
         f"'--rows' {env}ROWS'): -3 is not in the range 1<=x<=10000000"),
        ([survey_id, "--rows", "10", "--out", str(work / "missing" / "t.csv")], 2,
         f"--out: directory {str(work / 'missing')!r} of "),
        ([survey_id, "--rows", "10", "--out", str(work)], 2,
         f"File {str(work)!r} is a directory."),
        ([survey_id, "--rows", "10", "--out", str(out), "--seed", "-1"], 2,
         f"'--seed' {env}SEED'): -1 is not in the range x>=0"),
    ]  # fmt: skip
    for extra, code, message in cases:
        done = run_cli(*base, *extra)
        assert done.returncode == code, (extra, done.stderr)
        assert message in done.stderr, (message, done.stderr)
        assert "Traceback" not in done.stderr
        assert list(work.iterdir()) == []  # nothing written, no temporary file left
