"""``deniable-aggregator closeness`` through the installed console script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from deniable.aggregator.central.closeness import _search
from deniable.aggregator.cli import cli
from tests.conftest import RunCli

NINE = """PLZ,Points,System
3200-3299,75-90,iOS
3200-3299,75-90,Android
3200-3299,75-90,MacOS
2600-3199,35-45,Windows
2600-3199,35-45,Linux
2600-3199,35-45,Windows
3700-3899,25-34,MacOS
3700-3899,25-34,Windows
3700-3899,25-34,Android
"""
AUDIT = ("closeness", "--sensitive", "System", "--quasi", "PLZ,Points")


@pytest.fixture
def nine(tmp_path: Path) -> Path:
    path = tmp_path / "nine.csv"
    path.write_text(NINE, encoding="utf-8")
    return path


def test_json_reports_every_class_exactly_and_the_reference_set(
    run_cli: RunCli, nine: Path
) -> None:
    done = run_cli(
        "deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:],
        "--epsilon", "0.5", "--n", "6", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [group["distance_exact"] for group in data["classes"]] == ["4/9", "5/9", "2/9"]
    assert data["classes"][0]["distance"] == pytest.approx(4 / 9)
    assert data["classes"][0]["quasi"] == {"PLZ": "3200-3299", "Points": "75-90"}
    assert data["classes"][1]["counts"] == {
        "iOS": 0, "Android": 0, "MacOS": 0, "Windows": 2, "Linux": 1
    }  # fmt: skip
    assert [group["within_epsilon"] for group in data["classes"]] == [True, False, True]
    assert (data["max_distance_exact"], data["epsilon"], data["epsilon_close"]) == (
        "5/9",
        "1/2",
        False,
    )
    assert data["values"][3] == {"value": "Windows", "count": 3, "share": "1/3"}
    found = data["n_closeness"]
    assert (found["answer"], found["exact"], found["method"], found["n"]) == (
        True,
        True,
        "milp",
        6,
    )
    witness = found["witness"]
    assert witness["size"] == sum(witness["counts"].values()) >= 6
    assert max(witness["class_distances"]) <= 0.5


def test_text_is_a_table_and_the_exit_code_is_the_verdict(run_cli: RunCli, nine: Path) -> None:
    done = run_cli("deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:], "--epsilon", "1/2")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "PLZ        Points  size  distance      <= 1/2" in lines
    assert "3200-3299  75-90   3     4/9 = 0.4444  yes" in lines
    assert "2600-3199  35-45   3     5/9 = 0.5556  NO" in lines
    assert "The table is not 1/2-close: 1 of 3 classes exceed it." in lines
    exact = run_cli("deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:], "--epsilon", "5/9")
    assert exact.returncode == 0, exact.stderr
    assert "The table is 5/9-close: every class is within it." in exact.stdout.splitlines()
    plain = run_cli("deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:])
    assert plain.returncode == 0, plain.stderr
    assert "The table is epsilon-close exactly for epsilon >= 5/9 = 0.5556." in plain.stdout


def test_no_reference_set_exits_1_and_kl_names_its_method(run_cli: RunCli, nine: Path) -> None:
    none = run_cli(
        "deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:], "--epsilon", "0.49", "--n", "1"
    )
    assert none.returncode == 1, none.stderr
    assert "(n, epsilon)-closeness with n = 1, epsilon = 49/100: no (exact; method milp)" in (
        none.stdout
    )
    kl = run_cli(
        "deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:],
        "--distance", "kl", "--epsilon", "1", "--n", "6", "--json",
    )  # fmt: skip
    assert kl.returncode == 0, kl.stderr
    data = json.loads(kl.stdout)
    assert data["distance_formula"].endswith("makes it infinite (no smoothing)")
    assert data["classes"][0]["distance_exact"] is None
    assert (data["n_closeness"]["method"], data["n_closeness"]["answer"]) == ("exhaustive", True)


def test_options_come_from_the_environment(run_cli: RunCli, nine: Path) -> None:
    env = {
        "DENIABLE_AGGREGATOR_CLOSENESS_EPSILON": "0.5",
        "DENIABLE_AGGREGATOR_CLOSENESS_N": "6",
        "DENIABLE_AGGREGATOR_CLOSENESS_DISTANCE": "l1",
    }
    done = run_cli("deniable-aggregator", *AUDIT[:1], str(nine), *AUDIT[1:], "--json", env=env)
    data = json.loads(done.stdout)
    assert (data["distance"], data["epsilon"], data["n_closeness"]["n"]) == ("l1", "1/2", 6)
    assert done.returncode == 1  # L1 ≤ ½ is variational ≤ ¼: no M


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sensitive", "OS", "--quasi", "PLZ"], "sensitive column 'OS' is not in"),
        (["--sensitive", "System", "--quasi", "PLZ,Age"], "quasi-identifier column 'Age'"),
        (["--sensitive", "System", "--quasi", "System"], "'System' cannot be both"),
        (["--sensitive", "System", "--quasi", "PLZ", "--distance", "l3"], "'l3'"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "1.5"],
         "epsilon must be in [0, 1] for the variational distance, got 3/2"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "-0.1"],
         "epsilon must be in [0, 1] for the variational distance, got -1/10"),
        (["--sensitive", "System", "--quasi", "PLZ", "--distance", "l2", "--epsilon", "1.5"],
         "epsilon must be in [0, sqrt(2)] for the l2 distance, got 3/2"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "abc"],
         "epsilon 'abc' is not a number"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "0.5", "--n", "10"],
         "n must be in [1, 9] (the table's rows), got 10"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "0.5", "--n", "0"],
         "n must be in [1, 9] (the table's rows), got 0"),
        (["--sensitive", "System", "--quasi", "PLZ", "--n", "3"], "--n needs --epsilon"),
        (["--sensitive", "System", "--quasi", "PLZ", "--epsilon", "0.1234567", "--n", "3"],
         "epsilon 1234567/10000000 has too many digits"),
    ],
)  # fmt: skip
def test_bad_input_is_one_error_line_exit_2(
    run_cli: RunCli, nine: Path, args: list[str], message: str
) -> None:
    done = run_cli("deniable-aggregator", "closeness", str(nine), *args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("Error: ")
    assert message in last
    assert nine.read_text(encoding="utf-8") == NINE  # read-only


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("PLZ,Points,System\n", "the table has no rows (only a header)"),
        ("", "empty file (no header row)"),
        ("PLZ,System\n1\n", "record 2 has 1 fields, the header 2"),
    ],
)
def test_bad_tables_are_named(run_cli: RunCli, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    done = run_cli("deniable-aggregator", "closeness", str(path), "--sensitive", "System",
                   "--quasi", "PLZ")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == f"Error: {path}: {message}"
    assert done.stdout == ""


def test_the_docs_transcript_is_what_the_command_prints(run_cli: RunCli, nine: Path) -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "closeness.md").read_text()
    assert "```\n" + NINE + "```" in page  # the table of the worked example
    start = page.index("$ deniable-aggregator closeness nine.csv")
    block = page[start : page.index("```", start)].splitlines()
    words = block[0].split()[2:]
    done = run_cli("deniable-aggregator", words[0], str(nine), *words[2:])
    assert done.returncode == 1, done.stderr
    printed = done.stdout.splitlines()
    assert printed[0] == block[1].replace("nine.csv", str(nine))
    assert printed[1:] == block[2:]


def test_a_failed_integer_program_is_one_error_line_exit_1(
    nine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unfinished(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the integer program did not finish: time limit reached")

    monkeypatch.setattr(_search, "solve_l1", unfinished)
    done = CliRunner().invoke(
        cli, ["closeness", str(nine), *AUDIT[1:], "--epsilon", "1/2", "--n", "3"]
    )
    assert done.exit_code == 1
    assert done.stderr == "Error: the integer program did not finish: time limit reached\n"
    assert done.stdout == ""
