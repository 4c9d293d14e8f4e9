"""Participant guardrails through the real console script: policy, budget, memo, ledger."""

from __future__ import annotations

import fcntl
import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from deniable.client._files import data_dir
from deniable.client._guard import LocalState
from deniable.client._ledger import Charge, load_ledger, save_ledger
from deniable.client._remote import AggregatorClient
from deniable.client.cli import ExitCode
from deniable.shared.mechanisms import GeneralizedRandomizedResponse
from deniable.shared.questions import numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.client._recording import open_survey, recording_aggregator
from tests.conftest import ADMIN_TOKEN, BIN, Daemon, RunCli, binary_question


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon: each test creates its own surveys (tests/conftest.py)."""
    return shared_daemon


EPS_HALF = math.log(3)  # α = 0.5
EPS_QUARTER = math.log(1.25 / 0.75)  # α = 0.25
UNKNOWN_FIELD = b"\x9a\x06\x00"  # field 99: a kind this version does not know


def _create(address: str, *questions: pb.Question) -> str:
    questions = questions or (binary_question("q1", 0.5), binary_question("q2", 0.25))
    with AggregatorClient(address, admin_token=ADMIN_TOKEN) as admin:
        return admin.create_survey("Guardrails", questions).id


def _count(address: str, survey_id: str) -> int:
    with AggregatorClient(address) as client:
        return client.get_survey(survey_id).reports


def _answer(run_cli: RunCli, address: str, survey_id: str, *args: str) -> Any:
    """Answer with --json and --yes; the one JSON document, after checking success."""
    done = run_cli("deniable", "answer", "--server", address, survey_id, "--yes", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _refused(done: subprocess.CompletedProcess[str], *messages: str) -> None:
    """Exit code 5, one line on stderr with the messages, and no report shown or sent."""
    assert done.returncode == ExitCode.REFUSED, (done.returncode, done.stderr)
    assert "Will be sent" not in done.stdout
    assert "Sent " not in done.stdout
    assert done.stderr.startswith("Error: ")
    assert done.stderr.count("\n") == 1, done.stderr
    for message in messages:
        assert message in done.stderr, done.stderr


def _env() -> dict[str, str]:
    """This test's environment (its own XDG directories) without DENIABLE_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}


def _files() -> dict[str, bytes]:
    directory = data_dir()
    return {p.name: p.read_bytes() for p in directory.iterdir()} if directory.exists() else {}


def test_a_report_is_drawn_once_and_reaches_the_tally_once(daemon: Daemon, run_cli: RunCli) -> None:
    survey_id = _create(daemon.address)
    dry = _answer(run_cli, daemon.address, survey_id, "--answer", "q1=yes", "--answer", "q2=no",
                  "--dry-run")  # fmt: skip
    assert (dry["sent"], dry["privacy"]["charged"]) == (False, False)
    assert [r["reused"] for r in dry["reports"]] == [False, False]
    assert set(_files()) == {"memo.json", "participant.lock"}  # kept before shown, not charged
    shown = [(r["report_id"], r["bit"]) for r in dry["reports"]]
    # Other answers, a second dry run, then a declined confirmation: the same reports.
    again = _answer(run_cli, daemon.address, survey_id, "--answer", "q1=no", "--answer", "q2=yes",
                    "--dry-run")  # fmt: skip
    assert [(r["report_id"], r["bit"]) for r in again["reports"]] == shown
    assert again["privacy"]["cost"] == math.fsum([EPS_HALF, EPS_QUARTER])  # still uncharged
    declined = run_cli("deniable", "answer", "--server", daemon.address, survey_id,
                       "--interactive", input="n\n")  # fmt: skip
    assert declined.returncode == 0, declined.stderr
    assert declined.stdout.count("Answered before: the report drawn on ") == 2  # not asked
    assert "Nothing was sent." in declined.stdout
    assert all(report_id in declined.stdout for report_id, _ in shown)
    assert _count(daemon.address, survey_id) == 0
    # Sent with yet other answers: still the reports drawn first, charged once.
    sent = _answer(run_cli, daemon.address, survey_id, "--answer", "q1=no", "--answer", "q2=no")
    assert [(r["report_id"], r["bit"]) for r in sent["reports"]] == shown
    assert [r["reused"] for r in sent["reports"]] == [True, True]
    assert (sent["stored"], sent["privacy"]["cost"]) == (2, math.fsum([EPS_HALF, EPS_QUARTER]))
    ledger = (data_dir() / "ledger.json").read_bytes()
    # Once stored, answering again is refused: nothing is sent, charged or drawn.
    memo = (data_dir() / "memo.json").read_bytes()
    for answers in (("--answer", "q1=no", "--answer", "q2=no"), ("--answer", "q1=yes")):
        again_done = run_cli("deniable", "answer", "--server", daemon.address, survey_id,
                             "--yes", *answers)  # fmt: skip
        _refused(again_done, f"you already answered survey {survey_id} at {daemon.address}: its "
                 "2 reports were stored on ", "nothing was sent")  # fmt: skip
    assert (data_dir() / "ledger.json").read_bytes() == ledger
    assert (data_dir() / "memo.json").read_bytes() == memo
    assert _count(daemon.address, survey_id) == 2
    with AggregatorClient(daemon.address) as client:
        assert client.get_estimate(survey_id, "q1").n == 1  # one report per question


def test_a_failed_acknowledgement_resends_the_kept_reports_for_free(
    daemon: Daemon, run_cli: RunCli
) -> None:
    survey_id = _create(daemon.address)
    sent = _answer(run_cli, daemon.address, survey_id, "--answer", "q1=yes", "--answer", "q2=no")
    # As if the acknowledgement had been lost: the memo does not know the reports were stored.
    memo_path = data_dir() / "memo.json"
    memo = json.loads(memo_path.read_text())
    for entry in memo["reports"]:
        entry["sent_at"] = None
    memo_path.write_text(json.dumps(memo))
    resent = _answer(run_cli, daemon.address, survey_id, "--answer", "q1=no", "--answer", "q2=no")
    kept = [(r["report_id"], r["bit"]) for r in sent["reports"]]
    assert [(r["report_id"], r["bit"]) for r in resent["reports"]] == kept
    assert (resent["stored"], resent["already_stored"], resent["privacy"]["cost"]) == (0, 2, 0.0)
    assert _count(daemon.address, survey_id) == 2
    assert len(load_ledger(data_dir() / "ledger.json").charges) == 2  # charged once


def test_epsilon_above_the_limit_is_refused_before_anything_is_sent(
    daemon: Daemon, run_cli: RunCli
) -> None:
    survey_id = _create(daemon.address)
    args = ("--answer", "q1=yes", "--answer", "q2=no", "--yes", "--json")
    for extra, env, source in [
        (["--max-epsilon", "1"], None, "(from the command line)"),
        ([], {"DENIABLE_MAX_EPSILON": "1"}, "(from the environment)"),
    ]:
        done = run_cli(
            "deniable", "answer", "--server", daemon.address, survey_id, *args, *extra, env=env
        )
        _refused(
            done,
            "question 'q1': epsilon 1.0987 (computed on this device from randomized_response) "
            f"is above your limit of 1.0 per answer {source}; refusing to answer, nothing was "
            "sent. To accept this privacy loss, raise the limit with --max-epsilon",
        )
    assert _count(daemon.address, survey_id) == 0
    assert "ledger.json" not in _files()


def test_an_answer_over_budget_is_refused_and_a_free_resend_is_not(
    daemon: Daemon, run_cli: RunCli
) -> None:
    first = _create(daemon.address)
    # Other questions (the same ones would get the first survey's reports, at no cost).
    second = _create(daemon.address, _other("q1", 0.5), _other("q2", 0.25))
    # This costs 1.6094 of the budget of 2.
    _answer(run_cli, daemon.address, first, "--answer", "q1=yes", "--answer", "q2=no",
            "--budget", "2")  # fmt: skip
    ledger = (data_dir() / "ledger.json").read_bytes()
    over = run_cli(
        "deniable", "answer", "--server", daemon.address, second, "--yes",
        "--answer", "q1=no", "--answer", "q2=no", env={"DENIABLE_BUDGET": "2"},
    )  # fmt: skip
    _refused(
        over,
        "answering would spend epsilon 1.6095, but only 0.3905 of your budget of 2.0 (from the "
        "environment) is left on this device, over every aggregator (1.6095 spent): 1.2189 over "
        "budget; refusing to answer, nothing was sent. See 'deniable budget'; to accept more "
        "privacy loss, raise the budget with --budget, DENIABLE_BUDGET or budget in",
    )
    assert (data_dir() / "ledger.json").read_bytes() == ledger  # nothing charged
    assert _count(daemon.address, second) == 0
    # Resending reports charged before costs nothing, so even a lower budget lets it through
    # (here: as if the first survey's acknowledgement had been lost).
    memo_path = data_dir() / "memo.json"
    memo = json.loads(memo_path.read_text())
    for entry in memo["reports"]:
        entry["sent_at"] = None if entry["report"] else entry["sent_at"]
    memo_path.write_text(json.dumps(memo))
    free = _answer(run_cli, daemon.address, first, "--answer", "q1=no", "--answer", "q2=no",
                   "--budget", "1")  # fmt: skip
    assert (free["privacy"]["cost"], free["already_stored"]) == (0.0, 2)
    assert (data_dir() / "ledger.json").read_bytes() == ledger


def _other(qid: str, alpha: float) -> pb.Question:
    """A yes/no question like ``binary_question(qid, alpha)`` asking something else."""
    question = binary_question(qid, alpha)
    question.text = f"Another question {qid}?"
    return question


def _rr(alpha: float) -> pb.Mechanism:
    return pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha))


def _unknown_mechanism() -> pb.Question:
    question = pb.Question(id="bad", text="Q?", binary=pb.BinaryQuestion())
    question.mechanism.MergeFromString(UNKNOWN_FIELD)
    return question


def _unknown_question() -> pb.Question:
    question = pb.Question(id="bad", text="Q?", mechanism=_rr(0.5))
    question.MergeFromString(UNKNOWN_FIELD)
    return question


BAD_QUESTIONS = {
    "no privacy": (
        pb.Question(id="bad", text="Q?", binary=pb.BinaryQuestion(), mechanism=_rr(1.0)),
        "question 'bad': randomized_response (alpha 1.0) gives no privacy (epsilon = inf: the "
        "server would learn your true answer); refusing to answer, nothing was sent. Ask the "
        "survey's organizer for a setting with privacy",
    ),
    "invalid parameter": (
        pb.Question(id="bad", text="Q?", binary=pb.BinaryQuestion(), mechanism=_rr(1.5)),
        "question 'bad': mechanism.randomized_response.alpha: alpha must be in (0, 1], got 1.5; "
        "refusing to answer, nothing was sent. The survey's privacy setting is invalid",
    ),
    "unknown mechanism": (
        _unknown_mechanism(),
        "question 'bad': its mechanism is of a kind this version of deniable does not know",
    ),
    "unknown question kind": (
        _unknown_question(),
        "question 'bad': its question is of a kind this version of deniable does not know",
    ),
    "mechanism of another kind": (
        pb.Question(
            id="bad",
            text="Q?",
            binary=pb.BinaryQuestion(),
            mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
        ),
        "mechanism: grr does not apply to a binary question",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_QUESTIONS))
def test_bad_mechanisms_are_refused_before_anything_is_sent(run_cli: RunCli, case: str) -> None:
    question, message = BAD_QUESTIONS[case]
    survey = open_survey("s", binary_question("good", 0.5), question)
    with recording_aggregator([survey]) as (recorder, address):
        done = run_cli(
            "deniable", "answer", "--server", address, "s", "--yes",
            "--answer", "good=yes", "--answer", "bad=yes",
        )  # fmt: skip
    _refused(done, message)
    assert [call.method for call in recorder.calls] == ["GetSurvey"]  # no SubmitReports
    assert "Survey s" not in done.stdout  # refused before a question was shown
    assert _files() == {}


def test_a_damaged_ledger_or_memo_fails_closed(daemon: Daemon, run_cli: RunCli) -> None:
    survey_id = _create(daemon.address)
    _answer(run_cli, daemon.address, survey_id, "--answer", "q1=yes", "--answer", "q2=no")
    state = LocalState()
    good = state.ledger_path.read_bytes()
    args = ("--answer", "q1=no", "--answer", "q2=no")
    for path, damaged, problem in [
        (state.ledger_path, good[: len(good) // 2], "is not valid JSON"),
        (state.memo_path, b'{"format": "deniable-memo"}', "is not a valid memo (version must"),
    ]:
        original = path.read_bytes()
        path.write_bytes(damaged)
        done = run_cli("deniable", "answer", "--server", daemon.address, survey_id, "--yes", *args)
        _refused(
            done,
            f"Error: {path}: {problem}",
            "deniable answers no survey until it is readable (nothing was sent): restore the "
            "file from a backup, or move it aside to start afresh",
        )
        assert path.read_bytes() == damaged  # never reset or repaired behind your back
        if path == state.ledger_path:
            budget = run_cli("deniable", "budget")
            assert budget.returncode == ExitCode.REFUSED
            assert str(path) in budget.stderr
        path.write_bytes(original)
    assert _count(daemon.address, survey_id) == 2


def test_a_failed_send_stays_charged_and_the_retry_is_free(run_cli: RunCli) -> None:
    survey = open_survey("s", binary_question("q", 0.5))
    with recording_aggregator([survey]) as (recorder, address):
        recorder.fail_submits = 4  # every attempt of the first run
        failed = run_cli("deniable", "answer", "--server", address, "s", "--yes", "--answer",
                         "q=yes")  # fmt: skip
        assert failed.returncode == ExitCode.UNREACHABLE, failed.stderr
        assert "Your answers stay recorded in your ledger: running the same command again " in (
            failed.stderr
        )
        assert load_ledger(data_dir() / "ledger.json").spent(address) == EPS_HALF
        retry = _answer(run_cli, address, "s", "--answer", "q=yes")
    assert retry["privacy"] | {"cost": 0.0, "spent": EPS_HALF} == retry["privacy"]
    ids = {r.report_id for request in recorder.submitted() for r in request.reports}
    assert ids == {retry["reports"][0]["report_id"]}  # 5 attempts, one report
    assert len(recorder.submitted()) == 5


def test_a_second_invocation_waits_for_the_lock_and_sees_the_first(
    daemon: Daemon, run_cli: RunCli
) -> None:
    survey_id = _create(daemon.address)
    state = LocalState()
    state.directory.mkdir(parents=True)
    command = [str(BIN / "deniable"), "answer", "--server", daemon.address, survey_id, "--yes",
               "--json", "--answer", "q1=yes", "--answer", "q2=no"]  # fmt: skip
    with open(state.lock_path, "ab") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # as another deniable process would
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
        )
        assert process.stderr is not None
        for line in process.stderr:  # blocks until the child reports that it waits
            if line.startswith("Waiting for another deniable process to finish (lock file"):
                break
        else:
            pytest.fail(f"the child never waited for the lock: {process.wait()}")
        other = Charge(daemon.address, "other", "q", "grr", 0.75, "x" * 32, "t")
        save_ledger(state.ledger_path, state.read_ledger().add([other]))
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    stdout, _ = process.communicate()
    assert process.returncode == 0
    assert json.loads(stdout)["privacy"]["spent"] == math.fsum([0.75, EPS_HALF, EPS_QUARTER])
    ledger = state.read_ledger()
    assert ledger.surveys(daemon.address) == ["other", survey_id]  # both kept


def test_simultaneous_invocations_charge_once_and_send_the_same_reports(
    daemon: Daemon,
) -> None:
    survey_id = _create(daemon.address)
    command = [str(BIN / "deniable"), "answer", "--server", daemon.address, survey_id, "--yes",
               "--json", "--answer", "q1=yes", "--answer", "q2=no"]  # fmt: skip
    processes = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
        )
        for _ in range(3)
    ]
    outputs = [process.communicate() for process in processes]
    codes = [process.returncode for process in processes]
    # Whoever came first drew, charged and sent the reports. The others resent them for
    # free, or, if the first had already recorded the acknowledgement, were refused.
    assert sorted(set(codes)) in ([0], [0, ExitCode.REFUSED]), outputs
    documents = [
        json.loads(stdout) for (stdout, _), code in zip(outputs, codes, strict=True) if code == 0
    ]
    ids = {tuple(r["report_id"] for r in document["reports"]) for document in documents}
    assert len(ids) == 1
    costs = sorted(document["privacy"]["cost"] for document in documents)
    assert costs == [0.0] * (len(costs) - 1) + [math.fsum([EPS_HALF, EPS_QUARTER])]
    for (_, stderr), code in zip(outputs, codes, strict=True):
        assert code == 0 or "you already answered survey" in stderr
    ledger = json.loads((data_dir() / "ledger.json").read_text())  # valid JSON
    assert len(ledger["aggregators"][daemon.address][survey_id]) == 2
    assert _count(daemon.address, survey_id) == 2


def test_budget_shows_spent_and_remaining_per_aggregator_and_survey(
    daemon: Daemon, run_cli: RunCli
) -> None:
    empty = run_cli("deniable", "budget")
    assert empty.returncode == 0, empty.stderr
    assert "No privacy spent yet." in empty.stdout
    first = _create(daemon.address)
    second = _create(daemon.address, binary_question("only", 0.5))
    _answer(run_cli, daemon.address, first, "--answer", "q1=yes", "--answer", "q2=no")
    _answer(run_cli, daemon.address, second, "--answer", "only=no")
    done = run_cli("deniable", "budget", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # exactly one document
    assert document["ledger"] == str(data_dir() / "ledger.json")
    (row,) = document["aggregators"]
    spent = math.fsum([EPS_HALF, EPS_QUARTER, EPS_HALF])
    assert (row["aggregator"], row["spent"], row["budget"]) == (daemon.address, spent, 10.0)
    assert row["remaining"] == 10.0 - spent
    assert [(s["survey_id"], s["answers"]) for s in row["surveys"]] == [(first, 2), (second, 1)]
    assert row["surveys"][1]["charges"][0]["question_id"] == "only"
    text = run_cli("deniable", "budget", "--budget", "5")
    lines = text.stdout.splitlines()
    assert lines[0] == (
        "Budget: epsilon 5.0 on this device, over every aggregator (from the command line); at "
        "most 2.0 per answer (default)."
    )
    assert lines[2] == "This device: 2.7081 spent, 2.2919 left."
    assert lines[4].split() == ["AGGREGATOR", "SURVEY", "ANSWERS", "SPENT", "LEFT"]
    assert lines[5].split() == [daemon.address, "(all)", "3", "2.7081", "2.2919"]
    assert lines[6].split() == [first, "2", "1.6095"]
    # The budget is the device's: another aggregator can collect only what is left of it.
    other = run_cli("deniable", "budget", "--server", "LOCALHOST:1", "--json")
    document = json.loads(other.stdout)
    assert document["device"] == {"spent": spent, "budget": 10.0, "remaining": 10.0 - spent}
    assert document["aggregators"] == [
        {"aggregator": "localhost:1", "spent": 0.0, "budget": 10.0, "remaining": 10.0 - spent,
         "surveys": []}
    ]  # fmt: skip
    capped = run_cli("deniable", "budget", "--server", "LOCALHOST:1", "--json",
                     "--budget-per-aggregator", "1")  # fmt: skip
    (row,) = json.loads(capped.stdout)["aggregators"]
    assert (row["budget"], row["remaining"]) == (1.0, 1.0)


def test_no_true_answer_reaches_the_files_or_the_output(daemon: Daemon, run_cli: RunCli) -> None:
    options = ["Atlantis", "Zanzibar", "Avalon"]
    survey_id = _create(
        daemon.address,
        pb.Question(
            id="place",
            text="Where?",
            categorical=pb.CategoricalQuestion(options=options),
            mechanism=GeneralizedRandomizedResponse(3, 0.5).to_message(),
        ),
        pb.Question(
            id="hours",
            text="How long?",
            numeric=pb.NumericQuestion(min=0, max=100),
            mechanism=numeric_mechanism("hybrid", 0.0, 100.0, 1.0).to_message(),
        ),
    )
    data = _answer(run_cli, daemon.address, survey_id, "--answer", "place=Zanzibar",
                   "--answer", "hours=37.123456789")  # fmt: skip
    assert data["stored"] == 2
    needles = ["Zanzibar", "37.123456789", (37.123456789).hex()]
    for needle in needles:
        assert needle not in json.dumps(data)
        for name, content in _files().items():
            assert needle.encode() not in content, name


def test_an_unwritable_data_directory_refuses_before_sending(
    run_cli: RunCli, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    survey = open_survey("s", binary_question("q", 0.5))
    with recording_aggregator([survey]) as (recorder, address):
        done = run_cli(
            "deniable", "answer", "--server", address, "s", "--yes", "--answer", "q=yes",
            env={"XDG_DATA_HOME": str(blocker)},
        )  # fmt: skip
    _refused(done, f"{blocker}/deniable/ledger.json: cannot be read (Not a directory)",
             "nothing was sent")  # fmt: skip
    assert [call.method for call in recorder.calls] == ["GetSurvey"]
