"""Answering a survey on the participant's device: checks, answers, perturbed reports."""

from __future__ import annotations

import enum
import math
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click

from client._remote import RETRYABLE, RemoteError, exit_code_for
from client._values import perturbed_values
from shared._wire import Spec, describe_mechanism, question_spec
from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = [
    "Answer",
    "ExitCode",
    "InvalidAnswerError",
    "NotFoundError",
    "ParticipantError",
    "PreparedReport",
    "RefusedError",
    "UnreachableError",
    "answer_hint",
    "build_reports",
    "check_mechanism",
    "check_open",
    "from_remote",
    "parse_answer",
    "parse_answers",
]

Answer = bool | int | float
"""A true answer: yes/no, an option's index, or a number. It never leaves the device."""
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


def check_mechanism(question: pb.Question) -> Spec:
    """The participant's privacy policy for one question: the mechanism to perturb with.

    ε is always recomputed here from the mechanism's parameters; the server's ``privacy``
    field is never read. RefusedError (exit code 5): an unknown kind of question, a missing
    or unknown mechanism or one that does not fit the question, invalid parameters, and
    mechanisms without privacy (ε = inf, such as α = 1).

    Raises:
        RefusedError: the question's mechanism is refused.
    """
    where = f"question {question.id!r}"
    try:
        spec = question_spec(question)
    except ValueError as error:
        raise RefusedError(f"{where}: {error}; refusing to answer") from None
    if not math.isfinite(spec.epsilon):
        raise RefusedError(
            f"{where}: {describe_mechanism(question.mechanism)} gives no privacy "
            "(epsilon = inf); refusing to answer"
        )
    return spec


def answer_hint(question: pb.Question) -> str:
    """What an answer to this question looks like, for prompts and errors."""
    kind = question.WhichOneof("kind")
    if kind == "categorical":
        return f"an option name or its number 1..{len(question.categorical.options)}"
    if kind == "numeric":
        return f"a number from {question.numeric.min!r} to {question.numeric.max!r}"
    return "yes or no"


def parse_answer(text: str, question: pb.Question | None = None) -> Answer:
    """Parse one true answer for ``question`` (yes/no when no question is given).

    yes/no: ``yes``/``y`` → True, ``no``/``n`` → False, any case. Multiple choice: an option's
    name (any case) or its number from 1, giving the option's index. Numeric: a finite number
    in the question's [min, max]; values outside are an error, never clamped.

    Raises:
        ValueError: the text is not a valid answer (the message says what is expected).
    """
    value = text.strip()
    kind = "binary" if question is None else question.WhichOneof("kind")
    if kind == "categorical":
        assert question is not None
        options = list(question.categorical.options)
        lowered = [option.lower() for option in options]
        if value.lower() in lowered:
            return lowered.index(value.lower())
        if value.isdigit() and 1 <= int(value) <= len(options):
            return int(value) - 1
        raise ValueError(f"answer must be {answer_hint(question)}, got {text!r}")
    if kind == "numeric":
        assert question is not None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not question.numeric.min <= number <= question.numeric.max:
            raise ValueError(f"answer must be {answer_hint(question)}, got {text!r}")
        return number
    if value.lower() in YES:
        return True
    if value.lower() in NO:
        return False
    raise ValueError(f"answer must be yes or no, got {text!r}")


def parse_answers(options: Iterable[str], questions: Sequence[pb.Question]) -> dict[str, Answer]:
    """Parse ``--answer QID=VALUE`` options against the survey's questions.

    Raises:
        InvalidAnswerError: malformed option, unknown question id, bad or conflicting value.
    """
    by_id = {question.id: question for question in questions}
    answers: dict[str, Answer] = {}
    for option in options:
        qid, sep, value = option.partition("=")
        if not sep or not qid:
            raise InvalidAnswerError(f"--answer {option!r}: expected QID=VALUE")
        if qid not in by_id:
            raise InvalidAnswerError(
                f"--answer {option!r}: the survey has no question {qid!r} "
                f"(questions: {', '.join(by_id)})"
            )
        try:
            parsed = parse_answer(value, by_id[qid])
        except ValueError as error:
            raise InvalidAnswerError(f"--answer {option!r}: {error}") from None
        if answers.setdefault(qid, parsed) != parsed:
            raise InvalidAnswerError(
                f"--answer {option!r}: conflicting answers for question {qid!r}"
            )
    return answers


@dataclass(frozen=True)
class PreparedReport:
    """One randomized report, ready to send, with the mechanism it was perturbed by."""

    report: pb.Report
    mechanism: Spec

    def summary(self) -> dict[str, Any]:
        """What is sent, as JSON fields: never the true answer."""
        kind = self.report.WhichOneof("value")
        value: Any = getattr(self.report, kind) if kind else None
        if kind == "bits":
            value = value.hex()
        elif kind == "hashed":
            value = {"a": value.a, "b": value.b, "value": value.value}
        summary = {
            "report_id": self.report.report_id,
            "question_id": self.report.question_id,
            kind or "value": value,
            "mechanism": self.mechanism.kind,
            "epsilon": self.mechanism.epsilon,
        }
        alpha = getattr(self.mechanism, "alpha", None)
        return summary if alpha is None else {**summary, "alpha": alpha}

    def shown(self) -> str:
        """The reported value in words, for the participant's review."""
        kind = self.report.WhichOneof("value")
        if kind == "bit":
            return "yes" if self.report.bit else "no"
        if kind == "option":
            return f"option {self.report.option + 1}"
        if kind == "bits":
            return f"bits {self.report.bits.hex()}"
        if kind == "hashed":
            hashed = self.report.hashed
            return f"hash value {hashed.value}"
        return repr(self.report.number)


def build_reports(survey: pb.Survey, answers: Mapping[str, Answer]) -> list[PreparedReport]:
    """Perturb every true answer with the OS CSPRNG and wrap it in a report.

    The true answer goes only into the mechanism (:func:`perturbed_values`); the report
    carries the randomized value, a fresh random ``report_id`` and a copy of the question's
    mechanism.

    Raises:
        RefusedError: a question's mechanism is refused.
        InvalidAnswerError: a question has no answer.
    """
    prepared = []
    for question in survey.questions:
        mechanism = check_mechanism(question)
        if question.id not in answers:
            raise InvalidAnswerError(f"no answer for question {question.id!r}")
        (value,) = perturbed_values(mechanism, [answers[question.id]])
        report = pb.Report(
            report_id=secrets.token_hex(16),
            survey_id=survey.id,
            question_id=question.id,
            **value,
        )
        report.mechanism.CopyFrom(question.mechanism)
        prepared.append(PreparedReport(report, mechanism))
    return prepared
