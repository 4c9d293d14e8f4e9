"""Joint questions end to end: real daemon, console scripts, one report per joint answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from tests.conftest import Daemon, RunCli
from tests.e2e.test_end_to_end import create, reports_stored, write_spec


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test counts the reports and surveys it adds."""
    return shared_daemon


SPEC = {
    "title": "Honesty",
    "questions": [
        {"id": "habits", "text": "About last term", "type": "joint", "epsilon": 2.0,
         "parts": [
             {"id": "cheated", "text": "Did you cheat on an exam?"},
             {"id": "copied", "text": "Did you copy homework?"},
         ]},
        {"id": "work", "text": "Your job", "type": "joint", "epsilon": 1.0, "mechanism": "oue",
         "parts": [
             {"id": "dept", "text": "Department?", "type": "categorical",
              "options": ["HR", "IT", "Ops"]},
             {"id": "hours", "text": "Hours a week?", "type": "numeric",
              "min": 0, "max": 60, "bins": 3},
         ]},
    ],
}  # fmt: skip


def test_joint_survey_answered_and_estimated(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    shown = run_cli("deniable-aggregator", "survey", "show", "--server", daemon.address, survey_id)
    assert "joint of cheated (2) x copied (2): 4 cells in one report, grr" in shown.stdout
    assert "joint of dept (3) x hours (3): 9 cells in one report, oue" in shown.stdout
    answers = [("yes,no", "IT,45"), ("no,no", "1,0"), ("yes,yes", "ops,60")]
    for participant, (habits, work) in enumerate(answers):
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id,
            "--answer", f"habits={habits}", "--answer", f"work={work}", "--yes", "--json",
            env={"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        sent = json.loads(done.stdout)
        assert sent["stored"] == 2  # ONE report per joint question
        by_question = {r["question_id"]: r for r in sent["reports"]}
        assert by_question["habits"]["epsilon"] == 2.0 or by_question["habits"]["epsilon"] > 1.99
        assert 0 <= by_question["habits"]["option"] < 4
        assert len(bytes.fromhex(by_question["work"]["bits"])) == 2  # 9 cells, OUE bits
        home = {"XDG_DATA_HOME": str(tmp_path / f"participant-{participant}")}
        budget = json.loads(run_cli("deniable", "budget", "--json", env=home).stdout)
        (row,) = budget["aggregators"]
        # The ledger charges each joint question once, at its one report's epsilon.
        assert [c["question_id"] for c in row["surveys"][0]["charges"]] == ["habits", "work"]
        assert row["spent"] == by_question["habits"]["epsilon"] + by_question["work"]["epsilon"]
    # Interactively: asked part by part, one report for the question.
    done = run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id, "--interactive",
        env={"XDG_DATA_HOME": str(tmp_path / "participant-prompted")},
        input="no\nyes\nHR\n12\ny\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 parts, answered together in ONE randomized report:" in done.stdout
    assert "  Part cheated: Did you cheat on an exam?" in done.stdout
    assert "Privacy cost now: epsilon <= 3" in done.stdout  # two questions: 2 + 1
    assert reports_stored(daemon) - stored_before == 8
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    estimates = {e["question_id"]: e for e in json.loads(done.stdout)["estimates"]}
    habits = estimates["habits"]
    assert habits["n"] == 4
    assert [o["option"] for o in habits["options"]] == [
        "cheated=no, copied=no", "cheated=no, copied=yes",
        "cheated=yes, copied=no", "cheated=yes, copied=yes",
    ]  # fmt: skip
    assert sum(o["support"] for o in habits["options"]) == 4  # GRR: one cell per report
    marginals = {m["part"]: m["values"] for m in habits["marginals"]}
    assert [v["option"] for v in marginals["cheated"]] == ["no", "yes"]
    cells = [o["estimate"] for o in habits["options"]]
    assert abs(marginals["cheated"][1]["estimate"] - (cells[2] + cells[3])) < 1e-12
    assert abs(marginals["copied"][1]["estimate"] - (cells[1] + cells[3])) < 1e-12
    for value in marginals["cheated"]:
        assert 0.0 <= value["ci_low"] <= value["estimate"] <= value["ci_high"] <= 1.0
    (pair,) = habits["associations"]
    assert (pair["part_a"], pair["part_b"]) == ("cheated", "copied")
    assert pair["correlation_low"] <= pair["correlation"] <= pair["correlation_high"]
    assert "delta method" in habits["joint_coverage"]
    work = estimates["work"]
    assert [v["option"] for v in {m["part"]: m for m in work["marginals"]}["hours"]["values"]] == [
        "[0, 20)", "[20, 40)", "[40, 60]",
    ]  # fmt: skip
    assert work["associations"] == []  # a multiple-choice part has no covariance
    text = run_cli("deniable-aggregator", "estimate", "--server", daemon.address, survey_id)
    assert text.returncode == 0, text.stderr
    assert "cross-tab of cheated (rows) by the other parts:" in text.stdout
    assert "copied=no  copied=yes     total" in text.stdout
    assert "cheated and copied: covariance" in text.stdout
    checked = run_cli("deniable-aggregator", "check", "--db", daemon.db_url)
    assert checked.returncode == 0, checked.stderr  # tallies recomputed from the log agree


def test_bad_joint_answers_send_nothing(run_cli: RunCli, daemon: Daemon, tmp_path: Path) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    base = ["deniable", "answer", "--server", daemon.address, survey_id, "--yes",
            "--answer", "work=IT,3"]  # fmt: skip
    cases = [
        ("habits=yes", "answer must be 2 comma-separated values (cheated, copied in order"),
        ("habits=yes,maybe", "part 'copied': answer must be yes or no, got 'maybe'"),
        ("habits=yes,no,no", "answer must be 2 comma-separated values"),
    ]
    for answer, message in cases:
        done = run_cli(*base, "--answer", answer)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr, done.stderr
    done = run_cli(*base[:-2], "--answer", "habits=yes,no", "--answer", "work=IT,61")
    assert done.returncode == 2, done.stderr
    assert "part 'hours': answer must be a number from 0.0 to 60.0, got '61'" in done.stderr
    assert reports_stored(daemon) - stored_before == 0


def test_bad_joint_specs_are_usage_errors(run_cli: RunCli, daemon: Daemon, tmp_path: Path) -> None:
    def joint(*parts: dict[str, object], **extra: object) -> dict[str, object]:
        return {"id": "q", "text": "t", "type": "joint", "epsilon": 1.0, "parts": list(parts),
                **extra}  # fmt: skip

    big = [str(i) for i in range(40)]
    bad = [
        (joint({"id": "a"}), "spec.questions[0]: parts: need 2..8 parts, got 1"),
        (joint({"id": "a"}, {"id": "a"}), "parts[1].id: duplicate part id 'a'"),
        (joint({"id": "a"}, {"id": "b", "type": "ranking"}),
         "parts[1].type: expected one of binary, categorical, numeric, got 'ranking'"),
        (joint({"id": "a"}, {"id": "b", "type": "numeric", "min": 0, "max": 1}),
         "parts[1]: a numeric part needs 'edges', or 'min', 'max' and 'bins'"),
        (joint({"id": "a"}, {"id": "b", "type": "numeric", "edges": [0, 5, 5]}),
         "parts[1].numeric.edges[2]: edges must increase, got 5.0 after 5.0"),
        (joint({"id": "a", "type": "categorical", "options": big},
               {"id": "b", "type": "categorical", "options": big}),
         "parts: the parts have 40 x 40 = 1,600 cells, above the maximum 1024; at epsilon 1.0 "
         "(oue) a cell of average share 1/1600 would need about 144,913,604 participants"),
        (joint({"id": "a"}, {"id": "b"}, alpha=0.5),
         "unknown keys for a joint question ['alpha']"),
    ]  # fmt: skip
    listing = ("deniable-aggregator", "survey", "list", "--server", daemon.address, "--json")
    before = json.loads(run_cli(*listing).stdout)
    for question, message in bad:
        spec = write_spec(tmp_path, {"title": "T", "questions": [question]})
        done = run_cli(
            "deniable-aggregator", "survey", "create", "--server", daemon.address,
            "--admin-token-file", str(daemon.token_file), str(spec),
        )  # fmt: skip
        assert done.returncode == 2, (question, done.stderr)
        assert message in done.stderr, done.stderr
    listed = run_cli(*listing)
    assert json.loads(listed.stdout) == before, listed.stdout  # no refused spec created one


JOINT_SIM = [
    "deniable-aggregator", "simulate", "--type", "joint", "--part", "cheated",
    "--part", "copied", "--epsilon", "2", "--participants", "1500", "--seed", "11",
]  # fmt: skip


def test_simulate_joint_over_grpc_matches_in_process(run_cli: RunCli) -> None:
    """The embedded daemon's estimate equals the one computed in process from the same seed."""
    runs = {}
    for transport in ("grpc", "inprocess"):
        done = run_cli(*JOINT_SIM, "--distribution", "0.5,0.1,0.1,0.3", "--repeats", "60",
                       "--transport", transport, "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs[transport] = json.loads(done.stdout)
    grpc, local = runs["grpc"], runs["inprocess"]
    assert grpc["grpc"]["reports_sent"] == 60 * 1500
    assert grpc["first"]["options"] == local["first"]["options"]
    assert grpc["first"]["associations"] == local["first"]["associations"]
    assert grpc["cell_coverage"] == local["cell_coverage"]
    (pair,) = grpc["associations"]
    assert abs(pair["correlation"] - 7 / 12) < 1e-12  # the population's, from the cells
    # 60 runs at a true 95%: fewer covered than this floor has chance below 1e-4.
    floor = (stats.binom.ppf(1e-4, 60, 0.95) - 1) / 60
    assert stats.binom.cdf(floor * 60, 60, 0.95) < 1e-4
    assert min(grpc["cell_coverage"]) >= floor
    assert min(min(c) for c in grpc["marginal_coverage"].values()) >= floor
    assert pair["correlation_coverage"] >= floor
    assert pair["covariance_coverage"] >= floor


def test_plan_joint_is_a_cell_of_the_product_domain(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", "plan", "--type", "joint", "--part", "a", "--part",
                   "b=x|y|z", "--epsilon", "1", "--margin", "0.02", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    joint = json.loads(done.stdout)
    done = run_cli("deniable-aggregator", "plan", "--type", "categorical", "--options", "6",
                   "--epsilon", "1", "--margin", "0.02", "--json")  # fmt: skip
    categorical = json.loads(done.stdout)
    assert (joint["type"], joint["k"]) == ("joint", 6)
    by_name = {row["mechanism"]: row for row in categorical["mechanisms"]}
    assert [row["mechanism"] for row in joint["mechanisms"]] == ["grr", "oue"]  # no OLH
    for row in joint["mechanisms"]:
        assert row["participants"] == by_name[row["mechanism"]]["participants"]
    text = run_cli("deniable-aggregator", "plan", "--type", "joint", "--part", "a", "--part",
                   "b=x|y|z", "--epsilon", "1", "--margin", "0.02")  # fmt: skip
    assert "on one cell's share (6 cells in one report, worst-case share)" in text.stdout


def test_simulate_and_plan_joint_refuse_bad_input(run_cli: RunCli) -> None:
    cases = [
        ([*JOINT_SIM, "--distribution", "0.5,0.5"],
         "distribution: need 4 cell shares (one per cell, the first part slowest), got 2"),
        ([*JOINT_SIM, "--distribution", "0.5,0.1,0.1,0.1"], "must be non-negative and sum to 1"),
        ([*JOINT_SIM], "--type joint needs --distribution: 4 cell shares"),
        ([*JOINT_SIM, "--distribution", "0.5,0.1,0.1,0.3", "--options", "3"],
         "--options does not apply to --type joint"),
        (["deniable-aggregator", "simulate", "--type", "joint", "--epsilon", "1",
          "--participants", "10", "--distribution", "1"], "--type joint needs --part"),
        (["deniable-aggregator", "simulate", "--type", "categorical", "--options", "3",
          "--part", "a", "--epsilon", "1", "--participants", "10", "--distribution",
          "0.5,0.3,0.2"], "--part does not apply to --type categorical"),
        (["deniable-aggregator", "plan", "--type", "joint", "--part", "a", "--part",
          "b=0..10/1", "--epsilon", "1", "--margin", "0.1"],
         "parts[1].bins: must be an integer 2..1024, got 1"),
        (["deniable-aggregator", "plan", "--type", "joint", "--part", "a", "--part", "b",
          "--epsilon", "1", "--margin", "0.1", "--mechanism", "olh"],
         "--mechanism olh does not apply to --type joint (expected one of: auto, grr, oue)"),
    ]  # fmt: skip
    for args, message in cases:
        done = run_cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, done.stderr


def test_simulate_joint_once_says_what_its_coverage_columns_mean(run_cli: RunCli) -> None:
    done = run_cli(*JOINT_SIM, "--distribution", "0.5,0.1,0.1,0.3", "--transport", "inprocess")
    assert done.returncode == 0, done.stderr
    assert "One survey: each coverage is 1 if its interval covered the truth" in done.stdout
    assert "Coverage over" not in done.stdout
