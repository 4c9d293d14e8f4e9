"""Answering a survey on the participant's device: checks, answers, perturbed reports."""

from __future__ import annotations

import enum
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click

from client._remote import RETRYABLE, RemoteError, exit_code_for
from client._rr import RandomizedResponse
from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = [
    "ExitCode",
    "InvalidAnswerError",
    "NotFoundError",
    "ParticipantError",
    "PreparedReport",
    "RefusedError",
    "UnreachableError",
    "build_reports",
    "check_mechanism",
    "check_open",
    "from_remote",
    "parse_answer",
    "parse_answers",
]

YES = ("yes", "y")
NO = ("no", "n")


class ExitCode(enum.IntEnum):
    """Exit codes of the ``deniable`` command (also listed in ``deniable --help``)."""

    OK = 0  # success
    RUNTIME = 1  # unexpected or runtime error
    USAGE = 2  # invalid usage or answer
    UNREACHABLE = 3  # aggregator unreachable (UNAVAILABLE/DEADLINE_EXCEEDED after retries)
    NOT_FOUND = 4  # survey or question not found
    REFUSED = 5  # survey closed or mechanism refused (FAILED_PRECONDITION / policy)


class ParticipantError(click.ClickException):
    """A failure reported as one line, ``Error: ...`` on stderr; exit code 1 (runtime)."""

    exit_code = ExitCode.RUNTIME

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))  # always one line

    def show(self, file: IO[Any] | None = None) -> None:
        """Print ``Error: <message>`` on one line (stderr unless ``file`` is given)."""
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)


class InvalidAnswerError(ParticipantError):
    """Invalid usage or answer (exit code 2)."""

    exit_code = ExitCode.USAGE


class UnreachableError(ParticipantError):
    """The aggregator could not be reached, even after retries (exit code 3)."""

    exit_code = ExitCode.UNREACHABLE


class NotFoundError(ParticipantError):
    """Unknown survey or question (exit code 4)."""

    exit_code = ExitCode.NOT_FOUND


class RefusedError(ParticipantError):
    """Survey closed or mechanism refused, by the aggregator or by this device (exit code 5)."""

    exit_code = ExitCode.REFUSED


def from_remote(error: RemoteError, target: str) -> ParticipantError:
    """Map an aggregator status to a one-line error with the matching exit code."""
    if error.code in RETRYABLE:
        return UnreachableError(
            f"cannot reach the aggregator at {target} after {error.attempts} attempt(s) "
            f"({error.code.name}: {error.details})"
        )
    exit_code = exit_code_for(error.code)
    if exit_code == ExitCode.NOT_FOUND:
        return NotFoundError(error.details)
    if exit_code == ExitCode.REFUSED:
        return RefusedError(f"refused by the aggregator: {error.details}")
    message = f"aggregator error {error.code.name}: {error.details}"
    return InvalidAnswerError(message) if exit_code == ExitCode.USAGE else ParticipantError(message)


def check_open(survey: pb.Survey) -> None:
    """Refuse a survey that does not accept reports, before anything is perturbed."""
    if survey.state != pb.SURVEY_STATE_OPEN:
        raise RefusedError(f"survey {survey.id!r} is closed")
    if not survey.questions:
        raise RefusedError(f"survey {survey.id!r} has no questions")


def check_mechanism(question: pb.Question) -> RandomizedResponse:
    """The participant's privacy policy for one question: the mechanism to perturb with.

    ε is always recomputed here from the mechanism's parameters; the server's ``privacy``
    field is never read. RefusedError (exit code 5): a question that is not yes/no, a missing or
    unknown mechanism, an invalid α, and α = 1 (no privacy).

    Raises:
        RefusedError: the question's mechanism is refused.
    """
    where = f"question {question.id!r}"
    if question.WhichOneof("kind") != "binary":
        raise RefusedError(f"{where} is not a yes/no question")
    kind = question.mechanism.WhichOneof("kind")
    if kind != "randomized_response":
        raise RefusedError(f"{where}: missing or unknown mechanism {kind!r}; refusing to answer")
    try:
        mechanism = RandomizedResponse(question.mechanism.randomized_response.alpha)
    except (ValueError, TypeError) as error:
        raise RefusedError(f"{where}: {error}; refusing to answer") from None
    if not mechanism.is_private:
        raise RefusedError(
            f"{where}: alpha = 1 gives no privacy (epsilon = inf); refusing to answer"
        )
    return mechanism


def parse_answer(text: str) -> bool:
    """``yes``/``y`` → True, ``no``/``n`` → False (any case); anything else raises ValueError."""
    value = text.strip().lower()
    if value in YES:
        return True
    if value in NO:
        return False
    raise ValueError(f"answer must be yes or no, got {text!r}")


def parse_answers(options: Iterable[str], question_ids: Sequence[str]) -> dict[str, bool]:
    """Parse ``--answer QID=yes|no`` options against the survey's question ids.

    Raises:
        InvalidAnswerError: malformed option, unknown question id, bad or conflicting value.
    """
    answers: dict[str, bool] = {}
    for option in options:
        qid, sep, value = option.partition("=")
        if not sep or not qid:
            raise InvalidAnswerError(f"--answer {option!r}: expected QID=yes|no")
        if qid not in question_ids:
            raise InvalidAnswerError(
                f"--answer {option!r}: the survey has no question {qid!r} "
                f"(questions: {', '.join(question_ids)})"
            )
        try:
            bit = parse_answer(value)
        except ValueError as error:
            raise InvalidAnswerError(f"--answer {option!r}: {error}") from None
        if answers.setdefault(qid, bit) != bit:
            raise InvalidAnswerError(
                f"--answer {option!r}: conflicting answers for question {qid!r}"
            )
    return answers


@dataclass(frozen=True)
class PreparedReport:
    """One randomized report, ready to send, with the mechanism it was perturbed by."""

    report: pb.Report
    mechanism: RandomizedResponse

    def summary(self) -> dict[str, Any]:
        """What is sent, as JSON fields: never the true answer."""
        return {
            "report_id": self.report.report_id,
            "question_id": self.report.question_id,
            "bit": self.report.bit,
            "alpha": self.mechanism.alpha,
            "epsilon": self.mechanism.epsilon,
        }


def build_reports(survey: pb.Survey, answers: Mapping[str, bool]) -> list[PreparedReport]:
    """Perturb every true answer with the OS CSPRNG and wrap it in a report.

    The true answer goes only into ``RandomizedResponse.perturb``; the report carries the
    perturbed bit, a fresh random ``report_id`` and a copy of the question's mechanism.

    Raises:
        RefusedError: a question's mechanism is refused.
        InvalidAnswerError: a question has no answer.
    """
    prepared = []
    for question in survey.questions:
        mechanism = check_mechanism(question)
        if question.id not in answers:
            raise InvalidAnswerError(f"no answer for question {question.id!r}")
        report = pb.Report(
            report_id=secrets.token_hex(16),
            survey_id=survey.id,
            question_id=question.id,
            bit=mechanism.perturb(answers[question.id]),
        )
        report.mechanism.CopyFrom(question.mechanism)
        prepared.append(PreparedReport(report, mechanism))
    return prepared
