"""Multi-select questions end to end: real daemon, participant CLI, estimate --json."""

from __future__ import annotations

import json
from pathlib import Path
from subprocess import CompletedProcess

from tests.conftest import Daemon, RunCli
from tests.e2e.test_end_to_end import create, reports_stored, write_spec

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


def test_bad_multi_select_input_is_refused_and_nothing_is_stored(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    done = answer(run_cli, daemon, survey_id, tmp_path / "bad", "--answer", "fruit=apples,kiwis")
    assert done.returncode == 2
    assert "'kiwis' is not an item" in done.stderr
    assert reports_stored(daemon) == 0
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
    assert reports_stored(daemon) == 2


def test_the_interactive_prompt_lists_the_items_and_reasks_a_bad_answer(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
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
    assert reports_stored(daemon) == 2
