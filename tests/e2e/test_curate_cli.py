"""``curate`` in-process (the custodian's own use): queries, the ledger, releases."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.aggregator.central.curator.ledger._old_ledger import Ledger as OldLedger
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
    ledger = tmp_path / "curator.db"
    spend = ("--db", f"sqlite:///{ledger}")
    where = "age >= 30 AND (dept = 'HR' OR NOT remote = 'yes')"
    count = _json(run_cli, "curate", "count", str(staff), "--where", where, "--epsilon", "0.5",
                  "--budget", "2", *spend)  # fmt: skip
    assert count["epsilon"] == 0.5
    assert count["sensitivity"] == 1
    assert count["noise_scale"] == 2.0
    assert count["interval"]["confidence"] == 0.95
    assert count["interval"]["half_width"] == 6  # least k with P(|Z| <= k) >= 0.95 at b = 2
    assert "discrete Laplace" in count["interval"]["method"]
    privacy = count["privacy"]
    assert (privacy["dataset"], privacy["analyst"]) == ("staff", "custodian")
    assert privacy["charge"]["epsilon_exact"] == "1/2"
    assert privacy["balance"]["dataset_epsilon_left_exact"] == "3/2"
    histogram = _json(run_cli, "curate", "histogram", str(staff), "--column", "dept",
                      "--values", "HR,IT,Sales", "--epsilon", "0.5", *spend)  # fmt: skip
    assert [b["value"] for b in histogram["bins"]] == ["HR", "IT", "Sales"]
    assert histogram["sensitivity"] == 1
    total = _json(run_cli, "curate", "sum", str(staff), "--column", "age", "--min", "0",
                  "--max", "100", "--epsilon", "0.5", *spend)  # fmt: skip
    assert total["sensitivity"] == 100.0
    assert total["resolution"] == 1.0
    assert total["interval"]["low"] <= total["released"] <= total["interval"]["high"]
    mean = _json(run_cli, "curate", "mean", str(staff), "--column", "age", "--min", "18",
                 "--max", "70", "--epsilon", "0.5", *spend)  # fmt: skip
    assert 18 <= mean["interval"]["low"] <= mean["released"] <= mean["interval"]["high"] <= 70
    assert mean["privacy"]["balance"]["dataset_epsilon_left"] == 0.0
    assert "noisy sum / noisy count" in mean["method"]

    before = _dump(ledger)
    refused = run_cli(AGG, "curate", "count", str(staff), "--epsilon", "0.1", *spend, "--json")
    assert refused.returncode == 5
    assert refused.stdout == ""
    assert "would exceed the total of dataset 'staff'" in refused.stderr
    assert refused.stderr.rstrip().endswith("nothing was spent")
    assert _dump(ledger) == before

    shown = _json(run_cli, "curate", "ledger", str(staff), *spend)
    assert shown["balance"]["epsilon_spent_exact"] == "2"
    assert [s["query"] for s in shown["spends"]] == [
        f"count where {where}", "histogram of dept (listed values)",
        "sum of age in [0, 100]", "mean of age in [18, 70]",
    ]  # fmt: skip
    text = run_cli(AGG, "curate", "ledger", str(staff), *spend)
    assert "spent ε = 2; the data set has ε = 0 left" in text.stdout


def test_the_budget_follows_the_data_sets_name_not_the_files_bytes(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    env = {"DENIABLE_AGGREGATOR_CURATE_DB": f"sqlite:///{tmp_path / 'env.db'}"}
    args = ("curate", "count", str(staff), "--epsilon", "1")
    assert (
        _json(run_cli, *args, "--budget", "1", env=env)["privacy"]["balance"][
            "dataset_epsilon_left"
        ]
        == 0.0
    )
    assert run_cli(AGG, *args, env=env).returncode == 5
    staff.write_text(STAFF + "fay,23,HR,no,40000\n")  # other bytes: the same data set
    assert run_cli(AGG, *args, env=env).returncode == 5
    raised = run_cli(AGG, *args, "--budget", "2", env=env)
    assert raised.returncode == 2
    assert "a dataset's budget cannot change" in raised.stderr


def test_seeded_answers_repeat_are_labelled_not_private_and_touch_no_ledger(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "curator.db"
    env = {"DENIABLE_AGGREGATOR_CURATE_DB": f"sqlite:///{ledger}"}
    args = ["curate", "count", str(staff), "--epsilon", "1", "--seed", "4"]
    first, second = run_cli(AGG, *args, env=env), run_cli(AGG, *args, env=env)
    assert first.returncode == second.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    lines = first.stdout.splitlines()
    assert lines[0] == (
        "NOT PRIVATE: seeded noise (--seed 4), reproducible by anyone with the seed; for tests "
        "and demonstrations only, charged to no ledger"
    )
    assert lines[-1].startswith("Privacy: none (seeded noise)")
    assert not ledger.exists()
    document = _json(run_cli, *args, env=env)
    assert document["private"] is False
    assert document["privacy"] == {"private": False, "seed": 4}
    for extra, message in (
        (("--budget", "5"), "--budget: not used with --seed"),
        (("--db", f"sqlite:///{ledger}"), "--db: not used with --seed"),
    ):
        done = run_cli(AGG, *args, *extra, env=env)
        assert done.returncode == 2
        assert message in done.stderr
    release = ("curate", "release", str(staff), "--columns", "dept", "--values", "dept=HR,IT",
               "--epsilon", "1", "--budget", "5", "--output", str(tmp_path / "r.json"))  # fmt: skip
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
    assert not ledger.exists()
    assert _json(run_cli, *args[:-2], "--budget", "5", env=env)["private"] is True


def test_a_release_answers_later_queries_at_no_cost(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "curator.db"
    db = ("--db", f"sqlite:///{ledger}")
    out = tmp_path / "release.json"
    made = _json(run_cli, "curate", "release", str(staff), "--columns", "dept,age",
                 "--values", "dept=HR,IT,Sales", "--values", "age=29,34,38,45,51",
                 "--epsilon", "1", "--budget", "1", *db, "--output", str(out))  # fmt: skip
    assert made["privacy"]["balance"]["dataset_epsilon_left"] == 0.0
    assert made["release_id"].startswith("r-")
    document = json.loads(out.read_text())
    assert document["format"] == "deniable-curator-release/2"
    # No hash of the data is published: it would confirm a guess of a small table.
    assert hashlib.sha256(staff.read_bytes()).hexdigest() not in out.read_text()
    assert len(document["cells"]) == 15
    before = _dump(ledger)

    for source in (str(out), made["release_id"]):
        extra = () if source == str(out) else (str(staff), *db)
        count = _json(run_cli, "curate", "count", *extra, "--from-release", source, "--where",
                      "dept = 'HR' AND age IN (34, 38, 45, 51)")  # fmt: skip
        hr_over_30 = [c["count"] for c in document["cells"]
                      if c["values"][0] == "HR" and c["values"][1] > 30]  # fmt: skip
        assert count["released"] == sum(hr_over_30)
        assert count["privacy"]["post_processing"] is True
        assert count["interval"]["cells"] == 4
    histogram = _json(run_cli, "curate", "histogram", "--from-release", str(out),
                      "--column", "dept")  # fmt: skip
    assert [b["value"] for b in histogram["bins"]] == ["HR", "IT", "Sales"]
    mean = _json(run_cli, "curate", "mean", "--from-release", str(out), "--column", "age")
    assert 29 <= mean["released"] <= 51
    assert mean["privacy"]["post_processing"] is True
    text = run_cli(AGG, "curate", "count", "--from-release", str(out))
    assert "Privacy: no cost: post-processing of release" in text.stdout
    assert _dump(ledger) == before  # nothing spent

    for args, message in (
        (("mean", "--column", "dept"), "'dept' is released as str values"),
        (("count", "--where", "remote = 'yes'"), "column 'remote' is not in the release"),
        (("count", "--where", "age > 30"), "is not column = value or column IN (values)"),
        (("histogram", "--column", "remote"), "'remote' is not in the release"),
    ):
        done = run_cli(AGG, "curate", *args, "--from-release", str(out))
        assert done.returncode == 2
        assert message in done.stderr
    again = ("--columns", "dept", "--values", "dept=HR", "--epsilon", "1", "--output", str(out))
    existing = run_cli(AGG, "curate", "release", str(staff), *again, *db)
    assert existing.returncode == 2
    assert "exists (a release is never overwritten)" in existing.stderr
    assert _dump(ledger) == before


def test_bad_input_spends_nothing(run_cli: RunCli, staff: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "curator.db"
    base = ("curate", "count", str(staff), "--budget", "3", "--db", f"sqlite:///{ledger}")
    for args, message in (
        (("--epsilon", "1", "--where", "age >"), "--where"),
        (("--epsilon", "1", "--confidence", "1"), "confidence must be in (0, 1), got 1.0"),
        (("--epsilon", "1", "--where", "read_csv('/etc/passwd') IS NULL"), "read_csv"),
        (("--epsilon", "nan"), "got nan"),
    ):
        done = run_cli(AGG, *base, *args)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
    shown = _json(run_cli, "curate", "ledger", str(staff), "--db", f"sqlite:///{ledger}")
    assert shown["spends"] == []


def test_the_old_ledger_is_refused_naming_the_command_that_moves_it(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    old = tmp_path / "xdg" / "deniable" / "curator-ledger.sqlite"
    OldLedger(old).spend(hashlib.sha256(staff.read_bytes()).hexdigest(), 0.75, "count",
                         budget=1.0)  # fmt: skip
    args = ("curate", "count", str(staff), "--epsilon", "0.5", "--budget", "1")
    refused = run_cli(AGG, *args, env=env)
    assert refused.returncode == 2
    command = f"deniable-aggregator curate migrate-ledger {old} {staff} --dataset staff"
    assert command in refused.stderr
    moved = _json(run_cli, *command.split()[1:], env=env)
    assert (moved["dataset"], moved["spends"]) == ("staff", 1)
    over = run_cli(AGG, *args, env=env)  # 0.75 of 1 already spent: 0.5 is too much
    assert over.returncode == 5, over.stderr
    left = _json(run_cli, "curate", "count", str(staff), "--epsilon", "0.25", env=env)
    assert Fraction(left["privacy"]["balance"]["dataset_epsilon_left_exact"]) == 0
    again = run_cli(AGG, *command.split()[1:], env=env)
    assert again.returncode == 2
    assert "already moved to dataset 'staff'" in again.stderr


@pytest.mark.parametrize("command", ["count", "histogram", "sum", "mean", "release"])
def test_help_states_exit_codes_and_the_default_neighbours(run_cli: RunCli, command: str) -> None:
    done = run_cli(AGG, "curate", command, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split()).replace("add- remove", "add-remove")  # a wrapped line
    assert "5 refused by the privacy budget (nothing spent, no noise drawn)" in text
    assert "default: add-remove" in text
    assert "--server" in text
    assert "--token-file" in text


def test_serve_takes_the_aggregators_default_concurrency() -> None:
    from deniable.aggregator.cli.curate._serve import serve_command
    from deniable.aggregator.server import ServerLimits

    option = next(p for p in serve_command.params if p.name == "max_concurrent_rpcs")
    assert option.default == ServerLimits().max_concurrent_rpcs


def test_a_max_rows_below_the_count_clamps_and_says_nothing_of_the_count(
    run_cli: RunCli, staff: Path, tmp_path: Path
) -> None:
    """An error when the true count exceeds --max-rows would itself tell the count."""
    args = ("curate", "count", str(staff), "--epsilon", "1", "--budget", "3", "--max-rows", "2",
            "--db", f"sqlite:///{tmp_path / 'curator.db'}")  # fmt: skip
    answered = _json(run_cli, *args)
    assert 0 <= answered["released"] <= 2
    assert answered["clamp"] == [0, 2]
