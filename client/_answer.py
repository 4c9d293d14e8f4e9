"""Answering a survey on the participant's device: checks, answers, perturbed reports."""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.unknown_fields import UnknownFieldSet

from deniable.client._errors import InvalidAnswerError, RefusedError
from deniable.shared.errors import shown
from deniable.shared.mechanisms import Mechanism, describe_mechanism, mechanism_of
from deniable.shared.questions import QUESTION_ID, SURVEY_ID, Answer, question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "Answer",
    "PreparedReport",
    "answer_hint",
    "build_report",
    "build_reports",
    "check_mechanism",
    "check_open",
    "new_report_id",
    "parse_answer",
    "parse_answers",
]


def check_open(survey: pb.Survey) -> None:
    """Refuse a survey that does not accept reports, before anything is perturbed.

    Also refused: ids the aggregator never assigns (a survey id of ``[a-z0-9]{1,64}``,
    question ids of ``[A-Za-z0-9_.-]{1,64}``, unique). The ids are shown to the participant
    and written to the ledger and memo, so they are checked rather than trusted.
    """
    if not SURVEY_ID.fullmatch(survey.id):
        raise RefusedError(
            f"the aggregator sent an invalid survey id {shown(survey.id)}; refusing to answer, "
            "nothing was sent"
        )
    seen: set[str] = set()
    for index, question in enumerate(survey.questions):
        if not QUESTION_ID.fullmatch(question.id) or question.id in seen:
            problem = "a repeated" if question.id in seen else "an invalid"
            raise RefusedError(
                f"survey {survey.id}: the aggregator sent {problem} question id "
                f"{shown(question.id)} (question {index + 1}); refusing to answer, nothing "
                "was sent"
            )
        seen.add(question.id)
    if survey.state != pb.SURVEY_STATE_OPEN:
        raise RefusedError(f"survey {survey.id!r} is closed")
    if not survey.questions:
        raise RefusedError(f"survey {survey.id!r} has no questions")


def check_mechanism(question: pb.Question) -> Mechanism:
    """The mechanism to perturb one question's answer with, if this device accepts it.

    ε is always recomputed here from the mechanism's parameters; the server's ``privacy``
    field is never read. Refused: a kind of question or mechanism this version does not
    know, a missing mechanism or one that does not fit the question, invalid parameters, a
    domain outside the surveys' limits (such as a joint question's parts), and mechanisms
    without privacy (ε = inf, such as α = 1). The participant's limits
    (maximum ε, budget) are checked by :mod:`deniable.client._policy`.

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
        mechanism = mechanism_of(question)
        question_type(str(question.WhichOneof("kind"))).check(question, "question")
    except ValueError as error:
        raise RefusedError(
            f"{where}: {error}; refusing to answer, nothing was sent. The survey's privacy "
            "setting is invalid: tell the survey's organizer"
        ) from None
    if not math.isfinite(mechanism.epsilon):
        raise RefusedError(
            f"{where}: {describe_mechanism(question.mechanism)} gives no privacy "
            "(epsilon = inf: the server would learn your true answer); refusing to answer, "
            "nothing was sent. Ask the survey's organizer for a setting with privacy"
        )
    return mechanism


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
    return question_type(kind).answer_hint(question) if kind else "yes or no"


def parse_answer(text: str, question: pb.Question | None = None) -> Answer:
    """Parse one true answer for ``question`` (yes/no when no question is given).

    yes/no: ``yes``/``y`` → True, ``no``/``n`` → False, any case. Multiple choice: an option's
    name (any case) or its number from 1, giving the option's index. Numeric: a finite number
    in the question's [min, max]; values outside are an error, never clamped.

    Raises:
        ValueError: the text is not a valid answer (the message says what is expected).
    """
    if question is None:
        question = pb.Question(binary=pb.BinaryQuestion())
    kind = question.WhichOneof("kind") or "binary"
    return question_type(kind).parse_answer(text, question)


def check_answer_syntax(options: Iterable[str], flag: str = "--answer") -> None:
    """Refuse an ``--answer`` that is not ``QID=VALUE`` before any question is known.

    ``flag`` names where the answers came from in the errors (``--answers-file``).

    Raises:
        InvalidAnswerError: no ``=``, or nothing before it.
    """
    for option in options:
        qid, sep, _ = option.partition("=")
        if not sep or not qid:
            raise InvalidAnswerError(f"{flag} {option!r}: expected QID=VALUE")


def parse_answers(
    options: Iterable[str], questions: Sequence[pb.Question], flag: str = "--answer"
) -> dict[str, Answer]:
    """Parse ``--answer QID=VALUE`` options against the survey's questions.

    ``flag`` names where the answers came from in the errors (``--answers-file``).

    Raises:
        InvalidAnswerError: malformed option, unknown question id, bad or conflicting value.
    """
    options = list(options)
    check_answer_syntax(options, flag)
    by_id = {question.id: question for question in questions}
    answers: dict[str, Answer] = {}
    for option in options:
        qid, _, value = option.partition("=")
        if qid not in by_id:
            raise InvalidAnswerError(
                f"{flag} {option!r}: the survey has no question {qid!r} "
                f"(questions: {', '.join(by_id)})"
            )
        try:
            parsed = parse_answer(value, by_id[qid])
        except ValueError as error:
            raise InvalidAnswerError(f"{flag} {option!r}: {error}") from None
        if answers.setdefault(qid, parsed) != parsed:
            raise InvalidAnswerError(f"{flag} {option!r}: conflicting answers for question {qid!r}")
    return answers


@dataclass(frozen=True)
class PreparedReport:
    """One randomized report, ready to send, with the mechanism it was perturbed by.

    ``reused`` marks a report kept from an earlier run, or the value kept for the same
    question asked elsewhere: each question's report is drawn once and then always sent as
    it is, whatever the answer given later. ``charged``: this report is already in the
    ledger at its aggregator (nothing to record). ``paid``: its draw is already charged on
    this device (at this aggregator or another), so sending it costs nothing; ``draw`` is
    the report id the value was first drawn under, for a copy (None: this report's own).
    ``drawn_at`` and ``sent_at`` (UTC, ISO 8601) say when it was drawn and when the
    aggregator acknowledged it.
    """

    report: pb.Report
    mechanism: Mechanism
    reused: bool = False
    charged: bool = False
    drawn_at: str | None = None
    sent_at: str | None = None
    paid: bool = False
    draw: str | None = None

    @property
    def drawn(self) -> str:
        """The draw this report carries: the report id its value was first drawn under."""
        return self.draw or self.report.report_id

    @property
    def cost(self) -> float:
        """The ε this report adds to the device's total: 0 when its draw was charged before."""
        return 0.0 if self.paid or self.charged else self.mechanism.epsilon

    def summary(self) -> dict[str, Any]:
        """What is sent, as JSON fields: never the true answer."""
        summary = {
            "report_id": self.report.report_id,
            "question_id": self.report.question_id,
            self.mechanism.value_field: self.mechanism.summary_value(self.report),
            "mechanism": self.mechanism.name,
            "epsilon": self.mechanism.epsilon,
            "reused": self.reused,
            "charged": self.cost,
            "drawn_at": self.drawn_at,
        }
        alpha = self.mechanism.parameters().get("alpha")
        return summary if alpha is None else {**summary, "alpha": alpha}

    def shown(self) -> str:
        """The reported value in words, for the participant's review."""
        return self.mechanism.show_value(self.report)


def new_report_id(rng: np.random.Generator | None = None) -> str:
    """A fresh report id: 32 hex digits from the OS CSPRNG (or the injected test generator)."""
    return secrets.token_hex(16) if rng is None else rng.bytes(16).hex()


def build_report(
    survey_id: str,
    question: pb.Question,
    mechanism: Mechanism,
    answer: Answer,
    rng: np.random.Generator | None = None,
) -> PreparedReport:
    """Perturb one true answer with ``mechanism`` and wrap it in a report.

    The true answer goes only into the mechanism; the report carries the randomized value,
    a fresh random ``report_id`` and a copy of the question's mechanism. Randomness is the
    OS CSPRNG unless a seeded generator is injected (tests).
    """
    report_id = new_report_id(rng)  # drawn first: with a test generator, never truth-dependent
    (value,) = mechanism.encode(mechanism.perturb_many([answer], rng))
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
