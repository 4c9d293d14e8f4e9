"""A hostile aggregator cannot drive the participant's terminal with the texts it sends."""

# The fake aggregator is a real gRPC server on 127.0.0.1:0 that sends what a real daemon
# refuses to store: ESC sequences that clear the screen or move the cursor, CR and BS that
# overwrite a line, bidi overrides that reverse text. The installed ``deniable`` must show
# all of it as visible escapes, in listings, question texts, option labels, prompts and
# errors, and refuse ids that no aggregator assigns.

from __future__ import annotations

import grpc
import pytest

from deniable.shared.text import first_unsafe
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.client._recording import open_survey, recording_aggregator
from tests.conftest import RunCli, binary_question

CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
OVERWRITE = "\rPrivacy cost now: none"  # back to the line start, write over it
ERASE = "\x08" * 8
REVERSE = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
HOSTILE = f"Exam{CLEAR}{OVERWRITE}{ERASE}{REVERSE}txet\u2066x\x9b"


def hostile_survey(survey_id: str = "s") -> pb.Survey:
    yes_no = binary_question("cheated")
    yes_no.text = f"Did you cheat?{HOSTILE}"
    colour = pb.Question(
        id="colour",
        text=HOSTILE,
        categorical=pb.CategoricalQuestion(options=["red", f"gr{CLEAR}een", f"b{REVERSE}lue"]),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
    )
    survey = open_survey(survey_id, yes_no, colour)
    survey.title = HOSTILE
    return survey


def assert_nothing_unsafe(output: str) -> None:
    """No control character but the line feeds the tool writes itself, no bidi control."""
    for line in output.split("\n"):
        assert first_unsafe(line) is None, repr(line)


def test_listing_shows_hostile_titles_as_escapes(run_cli: RunCli) -> None:
    with recording_aggregator([hostile_survey()]) as (_, address):
        done = run_cli("deniable", "surveys", "--server", address)
    assert done.returncode == 0, done.stderr
    assert_nothing_unsafe(done.stdout + done.stderr)
    assert "Exam\\x1b[2J\\x1b[H\\x0dPrivacy cost now: none\\x08" in done.stdout
    assert "\\u202etxet\\u2066x\\x9b" in done.stdout


def test_questions_labels_prompts_and_errors_show_escapes(run_cli: RunCli) -> None:
    refusal = f"bad report{CLEAR}{OVERWRITE}{REVERSE}"
    with recording_aggregator([hostile_survey()]) as (recorder, address):
        recorder.submit_error = (grpc.StatusCode.INVALID_ARGUMENT, refusal)
        done = run_cli(
            "deniable", "answer", "--server", address, "s", "--interactive",
            input="yes\n2\ny\n",
        )  # fmt: skip
        submitted = recorder.submitted()
    assert len(submitted) == 1  # it was answered and sent: every text was shown on the way
    assert done.returncode == 2, done.stderr  # INVALID_ARGUMENT: usage or input error
    assert_nothing_unsafe(done.stdout + done.stderr)
    assert "Did you cheat?Exam\\x1b[2J" in done.stdout  # the question text
    assert "2. gr\\x1b[2J\\x1b[Heen" in done.stdout  # an option label
    assert "3. b\\u202elue" in done.stdout
    assert "bad report\\x1b[2J\\x1b[H Privacy cost now: none\\u202e" in done.stderr


@pytest.mark.parametrize(
    ("survey_id", "question_id", "shown"),
    [
        ("s", f"cheated{CLEAR}", "question id 'cheated\\x1b[2J\\x1b[H' (question 1)"),
        ("s", "colour", "repeated question id 'colour' (question 2)"),
        (f"s{REVERSE}", "cheated", "invalid survey id 's\\u202e'"),
    ],
)
def test_ids_no_aggregator_assigns_are_refused_before_anything_is_asked(
    run_cli: RunCli, survey_id: str, question_id: str, shown: str
) -> None:
    survey = hostile_survey(survey_id)
    survey.questions[0].id = question_id
    with recording_aggregator([survey]) as (recorder, address):
        done = run_cli("deniable", "answer", "--server", address, survey_id, "--interactive",
                       input="yes\n2\ny\n")  # fmt: skip
        submitted = recorder.submitted()
    assert submitted == []
    assert done.returncode == 5, done.stderr  # refused (FAILED_PRECONDITION)
    assert shown in done.stderr
    assert "refusing to answer, nothing was sent" in done.stderr
    assert_nothing_unsafe(done.stdout + done.stderr)
