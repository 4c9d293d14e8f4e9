"""Multi-select questions end to end: real daemon, participant CLI, estimate --json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.conftest import Daemon, RunCli
from tests.e2e.test_end_to_end import create, reports_stored, write_spec


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): a test counts the reports it adds."""
    return shared_daemon


SPEC = {
    "title": "Shopping",
    "questions": [
        {"id": "fruit", "text": "Which did you buy?", "type": "multi_select",
         "items": ["apples", "pears", "plums"], "epsilon": 1.5},
        {"id": "late", "text": "Were you late this week?", "alpha": 0.5},
    ],
}  # fmt: skip


def answer(
    run_cli: RunCli, daemon: Daemon, survey_id: str, home: Path, *extra: str
) -> CompletedProcess[str]:
    return run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id, "--yes", "--json",
        "--answer", "late=no", *extra, env={"XDG_DATA_HOME": str(home)},
    )  # fmt: skip


def test_answer_and_estimate_a_multi_select_question(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    shown = run_cli("deniable-aggregator", "survey", "show", "--server", daemon.address, survey_id)
    assert (
        "any of [apples, pears, plums], item_rr, epsilon = 1.5000 (exact) in total, "
        "0.5000 per item" in shown.stdout
    )
    answers = ["apples,pears", "none", "", "3", "Pears, plums", "apples,pears,plums"]
    for participant, chosen in enumerate(answers):
        done = answer(
            run_cli, daemon, survey_id, tmp_path / f"p{participant}", "--answer", f"fruit={chosen}"
        )
        assert done.returncode == 0, done.stderr
        sent = {r["question_id"]: r for r in json.loads(done.stdout)["reports"]}
        assert sent["fruit"]["mechanism"] == "item_rr"
        assert len(bytes.fromhex(sent["fruit"]["bits"])) == 1  # 3 bits, one byte
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id, "--json",
        "--question", "fruit", "--given", "apples", "--item", "PEARS",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (fruit,) = json.loads(done.stdout)["estimates"]
    assert (fruit["n"], fruit["mechanism"]) == (6, "item_rr")
    assert abs(fruit["epsilon"] - 1.5) < 1e-9
    assert [item["item"] for item in fruit["items"]] == ["apples", "pears", "plums"]
    assert [(p["first"], p["second"]) for p in fruit["pairs"]] == [
        ("apples", "pears"), ("apples", "plums"), ("pears", "plums"),
    ]  # fmt: skip
    matrix = fruit["cooccurrence"]
    assert matrix["items"] == ["apples", "pears", "plums"]
    for i in range(3):
        assert matrix["estimate"][i][i] == fruit["items"][i]["estimate"]
        for j in range(3):
            assert matrix["estimate"][i][j] == matrix["estimate"][j][i]
            assert matrix["ci_low"][i][j] <= matrix["estimate"][i][j] <= matrix["ci_high"][i][j]
    assert fruit["pairs"][0]["estimate"] == matrix["estimate"][0][1]
    assert fruit["pairs"][0]["support"] <= min(i["support"] for i in fruit["items"][:2])
    conditional = fruit["conditional"]
    assert (conditional["given"], conditional["item"]) == ("apples", "pears")
    assert 0.0 <= conditional["ci_low"] <= conditional["estimate"] <= conditional["ci_high"] <= 1
    assert "pairs: per pair" in fruit["coverage"]
    text = run_cli(
        "deniable-aggregator", "estimate", "--server", daemon.address, survey_id,
        "--question", "fruit", "--given", "apples", "--item", "pears",
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "co-occurrence: share choosing both (diagonal: the item's share)" in text.stdout
    assert "  pears" in text.stdout
    assert "among those who chose apples: pears" in text.stdout or "undefined" in text.stdout
    # check recomputes every tally (items and pairs) from the batch log
    checked = run_cli("deniable-aggregator", "check", "--db", daemon.db_url)
    assert checked.returncode == 0, checked.stderr


def test_bad_multi_select_input_is_refused_and_nothing_is_stored(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    done = answer(run_cli, daemon, survey_id, tmp_path / "bad", "--answer", "fruit=apples,kiwis")
    assert done.returncode == 2
    assert "'kiwis' is not an item" in done.stderr
    assert reports_stored(daemon) - stored_before == 0
    done = answer(run_cli, daemon, survey_id, tmp_path / "ok", "--answer", "fruit=apples")
    assert done.returncode == 0, done.stderr
    estimate = ["deniable-aggregator", "estimate", "--server", daemon.address, survey_id]
    cases = [
        (["--question", "fruit", "--given", "kiwis", "--item", "pears"], 2,
         "given: 'kiwis' is not an item of question 'fruit' (items: apples, pears, plums)"),
        (["--question", "fruit", "--given", "pears", "--item", "pears"], 2,
         "item: 'pears' is the given item; name another one"),
        (["--question", "late", "--given", "pears", "--item", "apples"], 2,
         "a conditional share applies only to multi-select questions; question 'late' is yes/no"),
        (["--question", "fruit", "--given", "pears"], 2, "--given and --item go together"),
        (["--given", "pears", "--item", "apples"], 2, "--given and --item need --question"),
    ]  # fmt: skip
    for extra, code, message in cases:  # 2: a usage error, or INVALID_ARGUMENT from the daemon
        done = run_cli(*estimate, *extra)
        assert done.returncode == code, (extra, done.stderr)
        assert message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert reports_stored(daemon) - stored_before == 2


def test_the_interactive_prompt_lists_the_items_and_reasks_a_bad_answer(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    stored_before = reports_stored(daemon)  # the shared daemon's other surveys
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    done = run_cli(
        "deniable", "answer", "--server", daemon.address, survey_id, "--interactive",
        env={"XDG_DATA_HOME": str(tmp_path / "p")}, input="apples,kiwis\n1,3\nno\ny\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert "     1. apples\n     2. pears\n     3. plums\n" in shown
    assert "Choose any: names or numbers separated by commas, or 'none'." in shown
    assert "'kiwis' is not an item" in shown
    assert "epsilon = 1.50 in total, 0.50 per item" in shown
    assert reports_stored(daemon) - stored_before == 2


SETS = "apples+pears:0.3,apples:0.1,pears+plums:0.1,none:0.5"
TRUTH = {"apples": 0.4, "pears": 0.4, "plums": 0.1}


def test_simulate_measures_coverage_of_items_pairs_and_conditional_shares(
    run_cli: RunCli,
) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--type", "multi_select",
        "--options", "apples,pears,plums", "--distribution", SETS, "--epsilon", "2",
        "--participants", "4000", "--repeats", "600", "--seed", "5",
        "--transport", "inprocess", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["type"], data["transport"], data["randomness"]) == (
        "multi_select", "inprocess", "seeded-pcg64",
    )  # fmt: skip
    assert data["distribution"] == {"apples+pears": 0.3, "apples": 0.1, "pears+plums": 0.1,
                                    "none": 0.5}  # fmt: skip
    assert [data["true_pairs"][i][i] for i in range(3)] == pytest.approx(list(TRUTH.values()))
    assert data["true_pairs"][0][1] == pytest.approx(0.3)
    assert data["true_pairs"][1][2] == pytest.approx(0.1)
    # 0.95 less 3 binomial standard errors over 600 repeats
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / 600)
    coverages = [*data["item_coverage"]]
    coverages += [data["pair_coverage"][i][j] for i in range(3) for j in range(i + 1, 3)]
    coverages += [data["conditional_coverage"][i][j] for i in range(3) for j in range(3) if i != j]
    assert len(coverages) == 3 + 3 + 6
    assert all(c >= floor for c in coverages), coverages
    assert data["conditional_coverage"][0][0] is None


def test_simulate_over_grpc_reads_back_the_same_tallies(run_cli: RunCli) -> None:
    args = [
        "deniable-aggregator", "simulate", "--type", "multi_select", "--options", "3",
        "--distribution", "0+1:0.5,2:0.5", "--epsilon", "1", "--participants", "500",
        "--repeats", "2", "--seed", "9",
    ]  # fmt: skip
    grpc = run_cli(*args, "--json")
    assert grpc.returncode == 0, grpc.stderr
    inprocess = run_cli(*args, "--json", "--transport", "inprocess")
    one, two = json.loads(grpc.stdout), json.loads(inprocess.stdout)
    assert one["grpc"]["reports_sent"] == 1000
    assert one["first"] == two["first"]  # same seed, same reports, the daemon's same tally
    text = run_cli(*args)
    assert "Co-occurrence (share choosing both): true / estimate" in text.stdout
    assert "the tallies above were read back with GetEstimate" in text.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--distribution", "a+c:1"], "--distribution entry 'a+c:1': 'c' is not an item"),
        (["--distribution", "a:0.5,none:0.4"], "probabilities must sum to 1, got 0.9"),
        (["--distribution", "a:0.5,a:0.5"], "entry 'a:0.5': that set is listed twice"),
        (["--distribution", "a"], "--distribution entry 'a' must be SET:P"),
        (["--distribution", "a:2,none:-1"], "probability must be in [0, 1], got 2.0"),
        (["--distribution", "a:1", "--alpha", "0.5"], "--alpha does not apply to --type multi"),
        (
            ["--distribution", "a:1", "--mechanism", "oue"],
            "--mechanism oue does not apply to --type multi_select",
        ),
        ([], "--type multi_select needs --distribution"),
    ],
)
def test_bad_simulate_input_is_a_usage_error(
    run_cli: RunCli, extra: list[str], message: str
) -> None:
    done = run_cli(
        "deniable-aggregator", "simulate", "--type", "multi_select", "--options", "a,b",
        "--epsilon", "1", "--participants", "10", "--transport", "inprocess", *extra,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_gives_the_participants_for_a_margin_on_an_item_share(run_cli: RunCli) -> None:
    done = run_cli(
        "deniable-aggregator", "plan", "--type", "multi_select", "--options", "a,b,c",
        "--epsilon", "2", "--margin", "0.05", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    q = 1 / (math.exp(2 / 3) + 1)  # ε split evenly over the 3 items
    one = q * (1 - q) / (1 - 2 * q) ** 2 + 0.25  # a debiased bit's variance, worst share 1/2
    assert (data["type"], data["mechanism"], data["k"]) == ("multi_select", "item_rr", 3)
    assert data["mechanisms"][0]["variance_one"] == pytest.approx(one)
    assert data["participants"] == math.ceil(1.959963984540054**2 * one / 0.05**2)
    v = one - 0.25  # worst pair: both items always chosen (v ≥ 1 here), Var1 = v² + 2v
    assert data["pair"]["variance_one"] == pytest.approx(v * v + 2 * v)
    assert data["pair"]["participants"] == math.ceil(
        1.959963984540054**2 * (v * v + 2 * v) / 0.05**2
    )
    text = run_cli(
        "deniable-aggregator", "plan", "--type", "multi_select", "--options", "a,b,c",
        "--epsilon", "2", "--participants", "1000",
    )  # fmt: skip
    assert "Margin on one item's share (3 items, worst-case share)" in text.stdout
    assert "Privacy: epsilon = 2.0000 per answer (exact), 0.6667 per item" in text.stdout
    assert (
        "A pair's co-occurrence (share choosing both of two items; worst case, Var1 9.0393)"
        in text.stdout
    )
    for extra, message in [
        (["--min", "0"], "--min does not apply to --type multi_select"),
        (["--alpha", "0.5"], "--alpha does not apply to --type multi_select"),
    ]:
        bad = run_cli(
            "deniable-aggregator", "plan", "--type", "multi_select", "--options", "a,b",
            "--epsilon", "1", "--margin", "0.05", *extra,
        )  # fmt: skip
        assert bad.returncode == 2
        assert message in bad.stderr
