"""``deniable-aggregator curate`` end to end: queries, the budget ledger, releases."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli

STAFF = """name,age,dept,remote,salary
ann,34,HR,yes,52000.5
bob,29,IT,no,61000
cy,45,HR,no,58000
dee,51,Sales,yes,
eve,38,IT,yes,70500.25
"""
AGG = "deniable-aggregator"


@pytest.fixture
def staff(tmp_path: Path) -> Path:
    path = tmp_path / "staff.csv"
    path.write_text(STAFF)
    return path


def _json(run_cli: RunCli, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = run_cli(AGG, *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert isinstance(document, dict)
    return document


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def test_queries_spend_the_budget_and_an_overspend_is_refused(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    spend = ("--ledger", ledger)
    where = "age >= 30 and (dept = 'HR' or not remote = 'yes')"
    count = _json(run_cli, "curate", "count", str(staff), "--where", where, "--epsilon", "0.5",
                  "--budget", "2", *spend)  # fmt: skip
    assert count["epsilon"] == 0.5
    assert count["sensitivity"] == 1
    assert count["noise_scale"] == 2.0
    assert count["interval"]["confidence"] == 0.95
    assert count["interval"]["half_width"] == 6  # least k with P(|Z| <= k) >= 0.95 at b = 2
    assert "discrete Laplace" in count["interval"]["method"]
    assert count["privacy"] == {
        "cost": 0.5, "budget": 2.0, "spent": 0.5, "remaining": 1.5,
        "data_sha256": hashlib.sha256(staff.read_bytes()).hexdigest(), "ledger": ledger,
    }  # fmt: skip
    histogram = _json(run_cli, "curate", "histogram", str(staff), "--column", "dept",
                      "--values", "HR,IT,Sales", "--neighbours", "replace", "--epsilon", "0.5",
                      *spend)  # fmt: skip
    assert [b["value"] for b in histogram["bins"]] == ["HR", "IT", "Sales"]
    assert histogram["sensitivity"] == 2
    assert histogram["noise_scale"] == 4.0
    assert all(0 <= b["released"] <= 5 for b in histogram["bins"])  # N = 5 is public
    total = _json(run_cli, "curate", "sum", str(staff), "--column", "age", "--min", "0",
                  "--max", "100", "--epsilon", "0.5", *spend)  # fmt: skip
    assert total["sensitivity"] == 100.0
    assert total["resolution"] == 1.0
    assert total["interval"]["low"] <= total["released"] <= total["interval"]["high"]
    mean = _json(run_cli, "curate", "mean", str(staff), "--column", "age", "--min", "18",
                 "--max", "70", "--epsilon", "0.5", *spend)  # fmt: skip
    assert 18 <= mean["interval"]["low"] <= mean["released"] <= mean["interval"]["high"] <= 70
    assert mean["privacy"]["remaining"] == 0.0
    assert "noisy sum / noisy count" in mean["method"]

    before = _dump(Path(ledger))
    refused = run_cli(AGG, "curate", "count", str(staff), "--epsilon", "0.1", *spend, "--json")
    assert refused.returncode == 5
    assert refused.stdout == ""
    assert refused.stderr == (
        "Error: epsilon 0.1 would overspend the budget: 2 total, 2 spent, 0 left; "
        "nothing was spent\n"
    )
    assert _dump(Path(ledger)) == before

    shown = _json(run_cli, "curate", "ledger", str(staff), "--ledger", ledger)
    assert shown["budget"] == 2.0
    assert shown["remaining"] == 0.0
    assert [s["query"] for s in shown["spends"]] == [
        f"count where {where}", "histogram of dept", "sum of age", "mean of age",
    ]  # fmt: skip
    text = run_cli(AGG, "curate", "ledger", str(staff), "--ledger", ledger)
    assert "2, spent 2, 0 left" in text.stdout
    assert "ε = 0.5  histogram of dept" in text.stdout


def test_seeded_answers_repeat_are_labelled_not_private_and_touch_no_ledger(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    env = {"DENIABLE_AGGREGATOR_CURATOR_LEDGER": str(tmp_path / "ledger.sqlite")}
    args = ["curate", "count", str(staff), "--epsilon", "1", "--seed", "4"]
    first, second = run_cli(AGG, *args, env=env), run_cli(AGG, *args, env=env)
    assert first.returncode == second.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    lines = first.stdout.splitlines()
    assert lines[0] == (
        "NOT PRIVATE: seeded noise (--seed 4), reproducible by anyone with the seed; for tests "
        "and demonstrations only, charged to no ledger"
    )
    assert "Noise: discrete Laplace of scale Δ/ε = 1/1 = 1" in first.stdout
    assert lines[-1] == (
        "Privacy: none: seeded noise (--seed 4); no ledger was read or written, no ε charged. "
        "Do not publish this answer"
    )
    assert not (tmp_path / "ledger.sqlite").exists()
    document = _json(run_cli, *args, env=env)
    assert document["private"] is False
    assert document["privacy"] | {"data_sha256": None} == {
        "private": False, "seed": 4, "cost": None, "budget": None, "spent": None,
        "remaining": None, "data_sha256": None, "ledger": None,
    }  # fmt: skip
    ledger = str(tmp_path / "ledger.sqlite")
    for extra, message in (
        (("--budget", "5"), "--budget: not used with --seed"),
        (("--ledger", ledger), "--ledger: not used with --seed"),
    ):
        done = run_cli(AGG, *args, *extra, env=env)
        assert done.returncode == 2
        assert message in done.stderr
    release = ("curate", "release", str(staff), "--columns", "dept", "--values", "dept=HR,IT",
               "--epsilon", "1", "--budget", "5", "--out", str(tmp_path / "r.json"))  # fmt: skip
    refused = run_cli(AGG, *release, "--seed", "4", env=env)
    assert refused.returncode == 2
    assert "--seed: a release is published, and seeded noise is not private" in refused.stderr
    assert not (tmp_path / "r.json").exists()
    variable = {**env, "DENIABLE_AGGREGATOR_CURATE_RELEASE_SEED": "4"}
    assert "CURATE_RELEASE_SEED is set" in run_cli(AGG, *release, env=variable).stderr
    for command, *options in (
        ("histogram", "--column", "dept", "--values", "HR,IT,Sales"),
        ("sum", "--column", "age", "--min", "0", "--max", "100"),
        ("mean", "--column", "age", "--min", "18", "--max", "70"),
    ):
        seeded = _json(run_cli, "curate", command, str(staff), *options, *args[3:], env=env)
        assert seeded["private"] is False
        assert seeded["privacy"]["ledger"] is None
    assert not (tmp_path / "ledger.sqlite").exists()
    assert _json(run_cli, *args[:-2], "--budget", "5", env=env)["private"] is True


def test_the_ledger_variable_and_a_changed_file_has_its_own_budget(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    env = {"DENIABLE_AGGREGATOR_CURATOR_LEDGER": str(tmp_path / "env.sqlite")}
    args = ("curate", "count", str(staff), "--epsilon", "1")
    assert _json(run_cli, *args, "--budget", "1", env=env)["privacy"]["remaining"] == 0.0
    assert run_cli(AGG, *args, env=env).returncode == 5
    staff.write_text(STAFF + "fay,23,HR,no,40000\n")  # other content, other SHA-256
    again = run_cli(AGG, *args, env=env)
    assert again.returncode == 2
    assert "no privacy budget is set for this data set: give --budget E" in again.stderr


def test_a_release_answers_later_queries_at_no_cost(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    out = tmp_path / "release.json"
    made = _json(run_cli, "curate", "release", str(staff), "--columns", "dept,age",
                 "--values", "dept=HR,IT,Sales", "--values", "age=29,34,38,45,51",
                 "--epsilon", "1", "--budget", "1", "--ledger", ledger,
                 "--out", str(out))  # fmt: skip
    assert made["privacy"]["remaining"] == 0.0
    assert made["private"] is True
    document = json.loads(out.read_text())
    assert document["format"] == "deniable-curator-release/1"
    # No hash of the data is published: it would confirm a guess of a small table.
    assert hashlib.sha256(staff.read_bytes()).hexdigest() not in out.read_text()
    assert len(document["cells"]) == 15
    before = _dump(Path(ledger))

    count = _json(run_cli, "curate", "count", "--from-release", str(out), "--where",
                  "dept = 'HR' and age > 30")  # fmt: skip
    hr_over_30 = [c["count"] for c in document["cells"]
                  if c["values"][0] == "HR" and c["values"][1] > 30]  # fmt: skip
    assert count["released"] == max(0, sum(hr_over_30))
    assert count["privacy"]["cost"] == 0
    assert count["privacy"]["post_processing"] is True
    assert count["interval"]["cells"] == 4
    histogram = _json(run_cli, "curate", "histogram", "--from-release", str(out),
                      "--column", "dept")  # fmt: skip
    assert [b["value"] for b in histogram["bins"]] == ["HR", "IT", "Sales"]
    mean = _json(run_cli, "curate", "mean", "--from-release", str(out), "--column", "age")
    assert 29 <= mean["released"] <= 51
    assert mean["privacy"]["cost"] == 0
    text = run_cli(AGG, "curate", "count", "--from-release", str(out))
    assert "Privacy: no cost: post-processing of the release" in text.stdout
    assert _dump(Path(ledger)) == before  # nothing spent

    for args, message in (
        (("mean", "--column", "dept"), "'dept' is released as str values"),
        (("count", "--where", "remote = 'yes'"), "unknown column 'remote' (columns: dept, age)"),
        (("histogram", "--column", "remote"), "'remote' is not in the release"),
    ):
        done = run_cli(AGG, "curate", *args, "--from-release", str(out))
        assert done.returncode == 2
        assert message in done.stderr
    again = ("--columns", "dept", "--values", "dept=HR", "--epsilon", "1", "--out", str(out))
    existing = run_cli(AGG, "curate", "release", str(staff), *again, "--ledger", ledger)
    assert existing.returncode == 2
    assert "exists; choose a new file" in existing.stderr
    assert _dump(Path(ledger)) == before


def test_bad_input_spends_nothing(run_cli: RunCli, staff: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    base = ("curate", "count", str(staff), "--budget", "3", "--ledger", str(ledger))
    for args, message in (
        (("--epsilon", "1", "--where", "age >"), "at position 5"),
        (("--epsilon", "1", "--confidence", "1"), "--confidence must be in (0, 1), got 1.0"),
        (("--epsilon", "1", "--max-rows", "2"), "--max-rows 2 is below the table's row count"),
        (("--epsilon", "nan"), "got nan"),
    ):
        done = run_cli(AGG, *base, *args)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
    shown = _json(run_cli, "curate", "ledger", str(staff), "--ledger", str(ledger))
    assert shown["budget"] is None  # not even the budget was recorded
    assert shown["spends"] == []


@pytest.mark.parametrize("command", ["count", "histogram", "sum", "mean", "release"])
def test_help_states_exit_codes_and_the_default_neighbours(run_cli: RunCli, command: str) -> None:
    done = run_cli(AGG, "curate", command, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split()).replace("add- remove", "add-remove")  # a wrapped line
    assert "5 refused by the privacy budget (nothing spent, no noise drawn)" in text
    assert "default: add-remove" in text
    assert "A histogram's sensitivity is 1 under add-remove, 2 under replace" in text
