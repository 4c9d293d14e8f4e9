"""Answering a survey on the participant's device: checks, answers, perturbed reports."""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.unknown_fields import UnknownFieldSet

from deniable.client._errors import (
    ExitCode,
    InvalidAnswerError,
    NotFoundError,
    ParticipantError,
    RefusedError,
    UnreachableError,
    from_remote,
)
from deniable.client._values import perturbed_values
from deniable.shared._wire import Spec, describe_mechanism, question_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

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
    "build_report",
    "build_reports",
    "check_mechanism",
    "check_open",
    "from_remote",
    "new_report_id",
    "parse_answer",
    "parse_answers",
]

Answer = bool | int | float
"""A true answer: yes/no, an option's index, or a number. It never leaves the device."""
YES = ("yes", "y")
NO = ("no", "n")


def check_open(survey: pb.Survey) -> None:
    """Refuse a survey that does not accept reports, before anything is perturbed."""
    if survey.state != pb.SURVEY_STATE_OPEN:
        raise RefusedError(f"survey {survey.id!r} is closed")
    if not survey.questions:
        raise RefusedError(f"survey {survey.id!r} has no questions")


def check_mechanism(question: pb.Question) -> Spec:
    """The mechanism to perturb one question's answer with, if this device accepts it.

    ε is always recomputed here from the mechanism's parameters; the server's ``privacy``
    field is never read. RefusedError (exit code 5): a kind of question or mechanism this
    version does not know, a missing mechanism or one that does not fit the question,
    invalid parameters, and mechanisms without privacy (ε = inf, such as α = 1). The
    participant's limits (maximum ε, budget) are checked by :mod:`client._policy`.

    Raises:
        RefusedError: the question's mechanism is refused; the message says what to do.
    """
    where = f"question {question.id!r}"
    unknown = _unknown_kind(question)
    if unknown:
        raise RefusedError(
            f"{where}: its {unknown} is of a kind this version of deniable does not know, so "
            "its privacy cannot be checked; refusing to answer, nothing was sent. A newer "
            "version of deniable may support it"
        )
    try:
        spec = question_spec(question)
    except ValueError as error:
        raise RefusedError(
            f"{where}: {error}; refusing to answer, nothing was sent. The survey's privacy "
            "setting is invalid: tell the survey's organizer"
        ) from None
    if not math.isfinite(spec.epsilon):
        raise RefusedError(
            f"{where}: {describe_mechanism(question.mechanism)} gives no privacy "
            "(epsilon = inf: the server would learn your true answer); refusing to answer, "
            "nothing was sent. Ask the survey's organizer for a setting with privacy"
        )
    return spec


def _unknown_kind(question: pb.Question) -> str | None:
    """``"mechanism"`` or ``"question"`` when it carries a kind unknown to this version.

    A newer server's kind arrives as an unknown field: no known kind is set, yet the
    message is not empty.
    """
    if question.mechanism.WhichOneof("kind") is None and len(UnknownFieldSet(question.mechanism)):
        return "mechanism"
    if question.WhichOneof("kind") is None and len(UnknownFieldSet(question)):
        return "question"
    return None


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
    """One randomized report, ready to send, with the mechanism it was perturbed by.

    ``reused`` marks a memoized report: sent before for the same answer, so resending it
    costs no privacy.
    """

    report: pb.Report
    mechanism: Spec
    reused: bool = False

    @property
    def cost(self) -> float:
        """The ε this report adds to the ledger: its mechanism's, or 0 when reused."""
        return 0.0 if self.reused else self.mechanism.epsilon

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
            "reused": self.reused,
            "charged": self.cost,
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


def new_report_id(rng: np.random.Generator | None = None) -> str:
    """A fresh report id: 32 hex digits from the OS CSPRNG (or the injected test generator)."""
    return secrets.token_hex(16) if rng is None else rng.bytes(16).hex()


def build_report(
    survey_id: str,
    question: pb.Question,
    mechanism: Spec,
    answer: Answer,
    rng: np.random.Generator | None = None,
) -> PreparedReport:
    """Perturb one true answer with ``mechanism`` and wrap it in a report.

    The true answer goes only into the mechanism (:func:`perturbed_values`); the report
    carries the randomized value, a fresh random ``report_id`` and a copy of the question's
    mechanism. Randomness is the OS CSPRNG unless a seeded generator is injected (tests).
    """
    report_id = new_report_id(rng)  # drawn first: with a test generator, never truth-dependent
    (value,) = perturbed_values(mechanism, [answer], rng)
    report = pb.Report(report_id=report_id, survey_id=survey_id, question_id=question.id, **value)
    report.mechanism.CopyFrom(question.mechanism)
    return PreparedReport(report, mechanism)


def build_reports(
    survey: pb.Survey, answers: Mapping[str, Answer], rng: np.random.Generator | None = None
) -> list[PreparedReport]:
    """Perturb every true answer (OS CSPRNG unless ``rng``) into a fresh report, in order.

    Raises:
        RefusedError: a question's mechanism is refused.
        InvalidAnswerError: a question has no answer.
    """
    prepared = []
    for question in survey.questions:
        mechanism = check_mechanism(question)
        if question.id not in answers:
            raise InvalidAnswerError(f"no answer for question {question.id!r}")
        prepared.append(build_report(survey.id, question, mechanism, answers[question.id], rng))
    return prepared
