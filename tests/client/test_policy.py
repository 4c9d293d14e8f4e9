"""The participant's policy: limits, where they come from, and what the client refuses."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deniable.client import InvalidAnswerError, RefusedError, check_mechanism
from deniable.client._policy import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_EPSILON,
    ConfigError,
    Policy,
    config_path,
    load_config,
    resolve_policy,
)
from deniable.client.cli import ExitCode
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli, binary_question

UNKNOWN_FIELD = b"\x9a\x06\x00"  # field 99, length-delimited, empty: a kind from the future


def test_defaults_are_documented_values() -> None:
    policy = Policy()
    assert (policy.max_epsilon, policy.budget) == (DEFAULT_MAX_EPSILON, DEFAULT_BUDGET)
    assert (DEFAULT_MAX_EPSILON, DEFAULT_BUDGET) == (2.0, 10.0)
    assert policy.source("budget") == "default"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text()
    assert "| `--max-epsilon` | 2.0 |" in docs  # the defaults are justified in docs/privacy.md
    assert "| `--budget` | 10 |" in docs


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_epsilon", 0.0, "max_epsilon must be a finite number > 0, got 0.0"),
        ("budget", -1, "budget must be a finite number > 0, got -1.0"),
        ("budget", math.inf, "budget must be a finite number > 0, got inf"),
        ("max_epsilon", math.nan, "max_epsilon must be a finite number > 0, got nan"),
        ("budget", True, "budget must be a real number, got True"),
        ("budget", "3", "budget must be a real number, got '3'"),
    ],
)
def test_policy_rejects_bad_values_naming_them(field: str, value: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        Policy(**{field: value})  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_config_file_is_read_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    assert load_config(path) == {}  # no file: nothing configured
    path.write_text("[participant]\nmax_epsilon = 1.5\nbudget = 8\n")
    assert load_config(path) == {"max_epsilon": 1.5, "budget": 8.0}
    cases = {
        "[participant]\nbudget = \n": "not valid TOML",
        "budget = 3\n": "unknown keys ['budget'] (put them under [participant])",
        "[participant]\nbudgett = 3\n": "unknown keys ['budgett'] in [participant]",
        "participant = 3\n": "participant must be a table, got 3",
        "[participant]\nbudget = 'lots'\n": "[participant] budget must be a real number",
        "[participant]\nmax_epsilon = -2\n": "max_epsilon must be a finite number > 0, got -2.0",
        "[participant]\nbudget = nan\n": "budget must be a finite number > 0, got nan",
    }
    for text, message in cases.items():
        path.write_text(text)
        with pytest.raises(ConfigError) as raised:
            load_config(path)
        assert str(path) in raised.value.message
        assert message in raised.value.message, raised.value.message
        assert raised.value.exit_code == ExitCode.USAGE
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(path)


def test_precedence_given_then_file_then_default(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[participant]\nbudget = 4.0\n")
    none: dict[str, tuple[float | None, str]] = {}
    policy = resolve_policy(none, path)
    assert (policy.max_epsilon, policy.budget) == (DEFAULT_MAX_EPSILON, 4.0)
    assert policy.sources == {"budget": f"from {path}"}
    given = {"budget": (6.0, "from the command line"), "max_epsilon": (None, "default")}
    policy = resolve_policy(given, path)
    assert policy.budget == 6.0
    assert policy.source("budget") == "from the command line"
    with pytest.raises(InvalidAnswerError, match=r"--budget: budget must be a finite"):
        resolve_policy({"budget": (-1.0, "from the command line")}, path)


def test_client_refuses_above_its_limit_using_its_own_epsilon() -> None:
    question = binary_question("q", alpha=0.5)  # ε = ln 3 = 1.0986...
    question.privacy.epsilon = 0.01  # a lying server: never read
    with pytest.raises(RefusedError) as raised:
        Policy(max_epsilon=1.0).check(question)
    message = raised.value.message
    assert "question 'q': epsilon 1.0987 (computed on this device from randomized_response)" in (
        message
    )
    assert "above your limit of 1.0 per answer (default)" in message
    assert "nothing was sent" in message
    assert "--max-epsilon, DENIABLE_MAX_EPSILON or max_epsilon in" in message
    assert raised.value.exit_code == ExitCode.REFUSED
    # A server overstating ε does not make the client refuse either: only parameters count.
    question.privacy.epsilon = 100.0
    assert Policy(max_epsilon=1.1).check(question).epsilon == pytest.approx(math.log(3))
    # The limit is inclusive and exact: ε = 2 (α = tanh(1)) passes a limit of 2.0.
    exactly_two = binary_question("q", alpha=math.tanh(1.0))
    assert Policy().check(exactly_two).epsilon <= 2.0


def _with_unknown_mechanism() -> pb.Question:
    question = pb.Question(id="q", text="Q?", binary=pb.BinaryQuestion())
    question.mechanism.MergeFromString(UNKNOWN_FIELD)
    return question


def test_unknown_kinds_are_refused_with_what_to_do() -> None:
    with pytest.raises(RefusedError) as raised:
        check_mechanism(_with_unknown_mechanism())
    assert "its mechanism is of a kind this version of deniable does not know" in (
        raised.value.message
    )
    assert "A newer version of deniable may support it" in raised.value.message
    question = pb.Question(id="q", text="Q?", mechanism=binary_question().mechanism)
    question.MergeFromString(UNKNOWN_FIELD)
    with pytest.raises(RefusedError, match="its question is of a kind this version"):
        check_mechanism(question)
    with pytest.raises(RefusedError, match="tell the survey's organizer"):
        check_mechanism(binary_question("q", alpha=1.5))
    with pytest.raises(RefusedError, match="Ask the survey's organizer for a setting with privacy"):
        check_mechanism(binary_question("q", alpha=1.0))


def _budget_json(
    run_cli: RunCli, *args: str, env: dict[str, str] | None = None
) -> dict[str, object]:
    done = run_cli("deniable", "budget", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    policy: dict[str, object] = json.loads(done.stdout)["policy"]
    return policy


def test_cli_precedence_command_line_environment_config_default(run_cli: RunCli) -> None:
    path = config_path()
    path.parent.mkdir(parents=True)
    path.write_text("[participant]\nbudget = 3\nmax_epsilon = 1.25\n")
    env = {"DENIABLE_BUDGET": "4"}
    assert _budget_json(run_cli, "--budget", "5", env=env) == {
        "max_epsilon": 1.25,
        "budget": 5.0,
        "budget_per_aggregator": None,
        "sources": {
            "max_epsilon": f"from {path}",
            "budget": "from the command line",
            "budget_per_aggregator": "default",
        },
    }
    capped = _budget_json(run_cli, env={"DENIABLE_BUDGET_PER_AGGREGATOR": "2"})
    assert (capped["budget_per_aggregator"], capped["budget"]) == (2.0, 3.0)
    assert _budget_json(run_cli, env=env)["budget"] == 4.0
    assert _budget_json(run_cli, env={"DENIABLE_BUDGET_BUDGET": "4.5"})["budget"] == 3.0  # retired
    assert _budget_json(run_cli)["budget"] == 3.0
    path.unlink()
    assert _budget_json(run_cli) == {
        "max_epsilon": DEFAULT_MAX_EPSILON,
        "budget": DEFAULT_BUDGET,
        "budget_per_aggregator": None,
        "sources": {
            "max_epsilon": "default",
            "budget": "default",
            "budget_per_aggregator": "default",
        },
    }


def test_malformed_config_is_a_usage_error_before_any_connection(run_cli: RunCli) -> None:
    path = config_path()
    path.parent.mkdir(parents=True)
    path.write_text("[participant]\nbudget = = 3\n")
    for args in (["budget"], ["answer", "--server", "127.0.0.1:9", "s", "--answer", "q=yes"]):
        done = run_cli("deniable", *args)
        assert done.returncode == ExitCode.USAGE, done.stderr  # not 3: nothing was contacted
        assert done.stderr.startswith(f"Error: config file {path}: not valid TOML")
        assert "fix or remove it" in done.stderr
        assert done.stdout == ""
    path.unlink()
    bad = run_cli("deniable", "budget", "--max-epsilon", "0")
    assert bad.returncode == ExitCode.USAGE
    assert bad.stderr == "Error: --max-epsilon: max_epsilon must be a finite number > 0, got 0.0\n"
