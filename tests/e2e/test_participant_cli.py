"""The participant CLI against a real aggregator: surveys, answer, exit codes, privacy."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from typing import Any

import click
import grpc
import pytest
from click.testing import CliRunner

from deniable.aggregator.server._lifecycle import RunningServer
from deniable.client._answer import build_reports, check_mechanism, parse_answers
from deniable.client._errors import RefusedError, from_remote
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.client.cli import EXIT_CODES, ExitCode, cli
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, BIN, Daemon, RunCli, binary_question


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon (tests/conftest.py): each test but the listing one makes its surveys."""
    return shared_daemon


def _create(address: str, title: str = "Exam honesty") -> pb.Survey:
    with AggregatorClient(address, admin_token=ADMIN_TOKEN) as admin:
        return admin.create_survey(title, [binary_question("q1"), binary_question("q2", 0.25)])


def _reports(address: str, survey_id: str) -> int:
    with AggregatorClient(address) as client:
        return client.get_survey(survey_id).reports


def _keys(document: Any) -> set[str]:
    """Every key of every object in a JSON document."""
    if isinstance(document, dict):
        return set(document) | {k for value in document.values() for k in _keys(value)}
    if isinstance(document, list):
        return {k for item in document for k in _keys(item)}
    return set()


def _assert_one_line_error(done: subprocess.CompletedProcess[str], code: ExitCode) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stderr.startswith("Error: ")
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_surveys_lists_open_surveys_as_text_and_json(own_daemon: Daemon, run_cli: RunCli) -> None:
    daemon = own_daemon  # a daemon of its own: the list is exactly its surveys
    survey = _create(daemon.address, "Exam honesty")
    closed = _create(daemon.address, "Already closed")
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        admin.close_survey(closed.id)
    text = run_cli("deniable", "surveys", "--server", daemon.address)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split() == ["ID", "QUESTIONS", "REPORTS", "TITLE"]
    assert text.stdout.splitlines()[1].split() == [survey.id, "2", "0", "Exam", "honesty"]
    assert closed.id not in text.stdout
    # --server from DENIABLE_SERVER (not from click's automatic DENIABLE_SURVEYS_SERVER).
    done = run_cli("deniable", "surveys", "--json", env={"DENIABLE_SERVER": daemon.address})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["surveys"] == [
        {"id": survey.id, "title": "Exam honesty", "questions": 2, "reports": 0}
    ]
    retired = run_cli("deniable", "surveys", env={"DENIABLE_SURVEYS_SERVER": daemon.address})
    assert retired.returncode == 2
    assert "DENIABLE_SURVEYS_SERVER is set but ignored: deniable reads DENIABLE_SERVER" in (
        retired.stderr
    )


def test_answer_sends_one_batch_and_prints_one_json_document(
    daemon: Daemon, run_cli: RunCli
) -> None:
    survey = _create(daemon.address)
    done = run_cli(
        "deniable", "answer", "--server", daemon.address, survey.id,
        "--answer", "q1=yes", "--answer", "q2=NO", "--json", "--yes",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # exactly one document; the human display is on stderr
    assert data["survey_id"] == survey.id
    assert data["sent"] is True
    assert (data["stored"], data["already_stored"]) == (2, 0)
    assert [r["question_id"] for r in data["reports"]] == ["q1", "q2"]
    assert [r["alpha"] for r in data["reports"]] == [0.5, 0.25]
    assert data["reports"][0]["epsilon"] == pytest.approx(1.0986122886681098, abs=0)
    assert all(isinstance(r["bit"], bool) and len(r["report_id"]) == 32 for r in data["reports"])
    assert not {"answer", "answers", "truth", "true_answer"} & _keys(data)
    assert "Sent 2 randomized answers; the server stored 2." in done.stderr
    assert "Exact epsilon: 0.5108256237659907, from alpha = 0.25" in done.stderr
    assert _reports(daemon.address, survey.id) == 2  # exactly one report per question
    with AggregatorClient(daemon.address) as client:
        assert client.get_estimate(survey.id, "q1").n == 1
        assert client.get_estimate(survey.id, "q2").n == 1


def _dead_address() -> str:
    """A loopback address where nothing listens (a daemon that died)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_a_target_naming_several_daemons_skips_a_dead_one(daemon: Daemon, run_cli: RunCli) -> None:
    survey = _create(daemon.address)
    dead = _dead_address()
    target = f"ipv4:{dead},{daemon.address}"
    done = run_cli(
        "deniable", "answer", "--server", target, survey.id,
        "--answer", "q1=yes", "--answer", "q2=no", "--json", "--yes",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["stored"], _reports(daemon.address, survey.id)) == (2, 2)
    # One ledger name for the logical aggregator, whatever the order of the list.
    name = ",".join(sorted([dead, daemon.address]))
    budget = run_cli("deniable", "budget", "--server", f"ipv4:{daemon.address},{dead}", "--json")
    assert budget.returncode == 0, budget.stderr
    [aggregator] = json.loads(budget.stdout)["aggregators"]
    assert aggregator["aggregator"] == name
    assert aggregator["spent"] == pytest.approx(1.0986122886681098 + 0.5108256237659907)


def test_dry_run_shows_the_reports_and_stores_nothing(daemon: Daemon, run_cli: RunCli) -> None:
    survey = _create(daemon.address)
    done = run_cli(
        "deniable", "answer", survey.id, "--answer", "q1=y", "--answer", "q2=n", "--dry-run",
        env={"DENIABLE_SERVER": daemon.address},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Will be sent to" in done.stdout
    assert "Dry run: nothing was sent or charged. The reports shown are kept" in done.stdout
    assert _reports(daemon.address, survey.id) == 0
    as_json = run_cli(
        "deniable", "answer", survey.id, "--answer", "q1=y", "--answer", "q2=n", "--dry-run",
        "--json", env={"DENIABLE_SERVER": daemon.address},
    )  # fmt: skip
    data = json.loads(as_json.stdout)
    assert (data["sent"], data["stored"], len(data["reports"])) == (False, 0, 2)
    assert [report["reused"] for report in data["reports"]] == [True, True]  # kept, shown again
    assert all(report["report_id"] in done.stdout for report in data["reports"])
    assert _reports(daemon.address, survey.id) == 0


def test_unknown_survey_exits_4_with_one_line(daemon: Daemon, run_cli: RunCli) -> None:
    survey = _create(daemon.address)
    done = run_cli(
        "deniable", "answer", "--server", daemon.address, "0123456789abcdef", "--answer", "q1=yes"
    )
    _assert_one_line_error(done, ExitCode.NOT_FOUND)
    assert "unknown survey '0123456789abcdef'" in done.stderr
    assert done.stdout == ""
    assert _reports(daemon.address, survey.id) == 0


def test_closed_survey_exits_5_before_anything_is_perturbed(
    daemon: Daemon, run_cli: RunCli
) -> None:
    survey = _create(daemon.address)
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        admin.close_survey(survey.id)
    done = run_cli(
        "deniable", "answer", "--server", daemon.address, survey.id,
        "--answer", "q1=yes", "--answer", "q2=no", "--yes", "--json",
    )  # fmt: skip
    _assert_one_line_error(done, ExitCode.REFUSED)
    assert f"survey {survey.id!r} is closed" in done.stderr
    assert done.stdout == ""
    assert _reports(daemon.address, survey.id) == 0


def test_unreachable_aggregator_exits_3_with_one_line(run_cli: RunCli) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run_cli("deniable", "answer", "--server", f"127.0.0.1:{port}", "abc", "--answer", "q=y")
    _assert_one_line_error(done, ExitCode.UNREACHABLE)
    assert f"cannot reach the aggregator at 127.0.0.1:{port} after 4 attempt(s)" in done.stderr
    assert done.stdout == ""


def test_a_malformed_answer_is_refused_before_the_aggregator_is_contacted(run_cli: RunCli) -> None:
    """--answer without QID= is a usage error even with no aggregator listening."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run_cli("deniable", "answer", "--server", f"127.0.0.1:{port}", "abc", "--answer", "q")
    _assert_one_line_error(done, ExitCode.USAGE)
    assert "--answer 'q': expected QID=VALUE" in done.stderr
    assert "cannot reach" not in done.stderr


def test_invalid_answers_exit_2_and_store_nothing(daemon: Daemon, run_cli: RunCli) -> None:
    survey = _create(daemon.address)
    cases = [
        (["--answer", "q1=yes", "--answer", "q2=maybe"], "--answer 'q2=maybe': answer must be"),
        (["--answer", "q1=yes", "--answer", "q3=no"], "the survey has no question 'q3'"),
        (["--answer", "q1", "--answer", "q2=no"], "--answer 'q1': expected QID=VALUE"),
        (["--answer", "q1=yes", "--answer", "q1=no", "--answer", "q2=no"], "conflicting"),
    ]
    for args, message in cases:
        done = run_cli("deniable", "answer", "--server", daemon.address, survey.id, *args, "--yes")
        _assert_one_line_error(done, ExitCode.USAGE)
        assert message in done.stderr
        assert done.stdout == ""
    # A missing answer when stdin is not a terminal: no prompt, an error naming the question.
    command = [str(BIN / "deniable"), "answer", "--server", daemon.address, survey.id]
    missing = subprocess.run(
        [*command, "--answer", "q1=y"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")},
    )  # fmt: skip
    _assert_one_line_error(missing, ExitCode.USAGE)
    assert "no answer for question 'q2'; pass --answer q2=yes|no" in missing.stderr
    assert _reports(daemon.address, survey.id) == 0


def test_interactive_prompts_for_answers_and_confirmation(server: RunningServer) -> None:
    survey = _create(server.address)
    runner = CliRunner()
    args = ["answer", "--server", server.address, survey.id, "--interactive"]
    declined = runner.invoke(cli, args, input="y\nn\nn\n", auto_envvar_prefix="DENIABLE")
    assert declined.exit_code == 0, declined.output
    assert declined.output.count("Your answer (yes, no, y, n):") == 2
    assert "Nothing was sent." in declined.output
    assert _reports(server.address, survey.id) == 0
    # The reports drawn then are kept: not asked again, only confirmed.
    sent = runner.invoke(cli, args, input="y\n", auto_envvar_prefix="DENIABLE")
    assert sent.exit_code == 0, sent.output
    assert "Your answer" not in sent.output
    assert sent.output.count("Answered before: the report drawn on ") == 2
    assert "Send these 2 randomized answers to" in sent.output
    assert "Sent 2 randomized answers; the server stored 2." in sent.output
    assert _reports(server.address, survey.id) == 2


def test_survey_closed_while_confirming_exits_5_and_stores_nothing(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    survey = _create(server.address)

    def close_then_confirm(*args: object, **kwargs: object) -> bool:
        with AggregatorClient(server.address, admin_token=ADMIN_TOKEN) as admin:
            admin.close_survey(survey.id)
        return True

    monkeypatch.setattr(click, "confirm", close_then_confirm)
    args = ["answer", "--server", server.address, survey.id, "--interactive"]
    args += ["--answer", "q1=yes", "--answer", "q2=yes"]
    done = CliRunner().invoke(cli, args, auto_envvar_prefix="DENIABLE")
    assert done.exit_code == ExitCode.REFUSED, done.output
    assert "Error: refused by the aggregator:" in done.stderr
    assert "is closed" in done.stderr
    assert _reports(server.address, survey.id) == 0


@pytest.mark.parametrize(("byte", "same"), [(b"\xff", False), (b"\x00", True)])
def test_reported_bit_comes_from_the_csprng_and_the_true_answer(
    monkeypatch: pytest.MonkeyPatch, byte: bytes, same: bool
) -> None:
    # For alpha = 0.5 the report keeps the truth iff the CSPRNG byte is < 192: 0xff always
    # flips it, 0x00 always keeps it. So the report is computed from the true answer.
    monkeypatch.setattr(os, "urandom", lambda n: byte * n)
    survey = pb.Survey(
        id="s", state=pb.SURVEY_STATE_OPEN, questions=[binary_question("a"), binary_question("b")]
    )
    for a, b in [(True, False), (False, True), (True, True), (False, False)]:
        prepared = build_reports(survey, {"a": a, "b": b})
        assert [item.report.bit for item in prepared] == [a == same, b == same]
        assert all(item.report.mechanism == survey.questions[0].mechanism for item in prepared)
        assert not {"answer", "truth"} & set(prepared[0].summary())


def _question(mechanism: pb.Mechanism | None) -> pb.Question:
    question = pb.Question(id="q", text="Q?", binary=pb.BinaryQuestion())
    if mechanism is not None:
        question.mechanism.CopyFrom(mechanism)
    return question


def _rr(alpha: float) -> pb.Mechanism:
    return pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha))


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (_question(None), "mechanism: missing (a binary question takes randomized_response)"),
        (_question(_rr(0.0)), "alpha must be in (0, 1], got 0.0"),
        (_question(_rr(1.5)), "alpha must be in (0, 1], got 1.5"),
        (_question(_rr(float("nan"))), "alpha must be a finite number"),
        (_question(_rr(1.0)), "randomized_response (alpha 1.0) gives no privacy"),
        (pb.Question(id="q", text="Q?", mechanism=_rr(0.5)), "kind: missing"),
        (
            pb.Question(
                id="q",
                text="Q?",
                categorical=pb.CategoricalQuestion(options=["a", "b"]),
                mechanism=_rr(0.5),
            ),
            "randomized_response does not apply to a categorical question",
        ),
        (
            pb.Question(
                id="q",
                text="Q?",
                categorical=pb.CategoricalQuestion(options=["a", "b"]),
                mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=1.0)),
            ),
            "grr (alpha 1.0) gives no privacy",
        ),
        (
            pb.Question(
                id="q",
                text="Q?",
                joint=pb.JointQuestion(
                    parts=[
                        pb.JointPart(id="a", binary=pb.BinaryQuestion()),
                        pb.JointPart(id="a", binary=pb.BinaryQuestion()),
                    ]
                ),
                mechanism=_rr(0.5),
            ),
            "randomized_response does not apply to a joint question",
        ),
        (
            pb.Question(
                id="q",
                text="Q?",
                joint=pb.JointQuestion(
                    parts=[
                        pb.JointPart(id="a", binary=pb.BinaryQuestion()),
                        pb.JointPart(id="a", binary=pb.BinaryQuestion()),
                    ]
                ),
                mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
            ),
            "question.joint.parts[1].id: duplicate part id 'a'",
        ),
        (
            pb.Question(
                id="q",
                text="Q?",
                joint=pb.JointQuestion(
                    parts=[
                        pb.JointPart(id="a", binary=pb.BinaryQuestion()),
                        pb.JointPart(
                            id="b", numeric=pb.BinnedNumericQuestion(edges=[0, float("inf"), 1])
                        ),
                    ]
                ),
                mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
            ),
            "question.joint.parts[1].numeric.edges[1]: must be finite",
        ),
    ],
)
def test_mechanisms_the_client_refuses(question: pb.Question, message: str) -> None:
    with pytest.raises(RefusedError) as raised:
        check_mechanism(question)
    assert message in raised.value.message
    assert raised.value.exit_code == ExitCode.REFUSED


def test_client_computes_epsilon_itself_not_from_the_server() -> None:
    question = binary_question("q", alpha=0.5)
    question.privacy.epsilon = 0.01  # a lying server
    assert check_mechanism(question).epsilon == pytest.approx(1.0986122886681098, abs=0)


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [
        (grpc.StatusCode.UNAVAILABLE, ExitCode.UNREACHABLE),
        (grpc.StatusCode.DEADLINE_EXCEEDED, ExitCode.UNREACHABLE),
        (grpc.StatusCode.NOT_FOUND, ExitCode.NOT_FOUND),
        (grpc.StatusCode.FAILED_PRECONDITION, ExitCode.REFUSED),
        (grpc.StatusCode.INVALID_ARGUMENT, ExitCode.USAGE),
        (grpc.StatusCode.ALREADY_EXISTS, ExitCode.REFUSED),
        (grpc.StatusCode.INTERNAL, ExitCode.RUNTIME),
    ],
)
def test_status_codes_map_to_documented_exit_codes(
    code: grpc.StatusCode, exit_code: ExitCode
) -> None:
    error = from_remote(RemoteError(code, "some\ndetails", attempts=4), "h:1")
    assert error.exit_code == exit_code
    assert "\n" not in error.message


def test_parse_answers_accepts_yes_no_y_n_in_any_case() -> None:
    given = ["a=yes", "b=N", "c=Y", "d=No"]
    assert parse_answers(given, [binary_question(q) for q in "abcd"]) == {
        "a": True,
        "b": False,
        "c": True,
        "d": False,
    }


def test_help_documents_every_exit_code_and_the_server_variable() -> None:
    runner = CliRunner()
    group = runner.invoke(cli, ["--help"]).output
    for code, meaning in EXIT_CODES.items():
        assert f"{int(code)} {meaning}" in " ".join(group.split())
    assert set(EXIT_CODES) == set(ExitCode)
    answer = runner.invoke(cli, ["answer", "--help"]).output
    assert "DENIABLE_SERVER" in answer
    assert "--dry-run" in answer


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ("", "empty"),
        ("foo bar", "'foo bar' is not HOST:PORT"),
        ("host", "'host' is not HOST:PORT"),
        ("host:0", "port '0' is not 1..65535"),
        ("host:99999", "port '99999' is not 1..65535"),
        ("[::1", "'[::1' is not HOST:PORT (write [IPv6]:PORT)"),
        ("h:1,h:2", "a list of daemons needs ipv4: or ipv6: (or dns:///NAME:PORT)"),
        ("ipv4:127.0.0.1:1,h:2", "'h' is not an IPv4 address"),
    ],
)
def test_malformed_server_address_is_a_usage_error(server: str, reason: str) -> None:
    done = CliRunner().invoke(cli, ["surveys", "--server", server])
    assert done.exit_code == ExitCode.USAGE
    assert done.stderr == (
        f"Error: --server {server!r}: {reason}; expected HOST:PORT (e.g. 127.0.0.1:50051), "
        "or several daemons as dns:///HOST:PORT or ipv4:ADDRESS:PORT,ADDRESS:PORT\n"
    )


def test_help_documents_the_guardrails_and_their_sources() -> None:
    runner = CliRunner()
    group = " ".join(runner.invoke(cli, ["--help"]).output.split())
    for text in ("budget", "DENIABLE_MAX_EPSILON", "DENIABLE_BUDGET", "config.toml"):
        assert text in group
    for command in ("answer", "budget"):
        shown = " ".join(runner.invoke(cli, [command, "--help"]).output.split())
        assert "--max-epsilon EPSILON" in shown
        assert "env var: DENIABLE_MAX_EPSILON" in shown
        assert "env var: DENIABLE_BUDGET" in shown
    answer = " ".join(runner.invoke(cli, ["answer", "--help"]).output.split())
    assert "send and charge nothing (the reports are kept)" in answer
    assert "drawn once and kept" in answer
    assert "recorded in your ledger before anything is sent" in answer
