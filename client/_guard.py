"""Guardrails around sending: reports drawn once and kept, the budget, charging before sending."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from deniable.client._answer import Answer, PreparedReport, build_report
from deniable.client._content import content_of, copy_report, repeats
from deniable.client._errors import InvalidAnswerError, RefusedError
from deniable.client._files import LOCK_NAME, data_dir, exclusive_lock
from deniable.client._ledger import (
    LEDGER_NAME,
    Charge,
    Ledger,
    aggregator_name,
    load_ledger,
    save_ledger,
)
from deniable.client._memo import MEMO_NAME, Kept, Memo, definition_of, load_memo, save_memo
from deniable.client._plan import Plan
from deniable.shared.mechanisms import Mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["LocalState", "Plan", "Session"]


def _source(
    twin: Kept | None, earlier: PreparedReport | None, paid: set[str], spec: Mechanism
) -> PreparedReport:
    """What a repeated question sends: an earlier question's report, or the one kept elsewhere.

    (An earlier question of the survey with the same content got the same twin, if any.)
    """
    if earlier is not None:
        return earlier
    if twin is None:
        raise RuntimeError("a repeated question without its first report")
    return PreparedReport(
        twin.report,
        spec,
        reused=True,
        drawn_at=twin.drawn_at,
        paid=twin.drawn in paid,
        draw=twin.draw,
    )


def now_utc(now: datetime | None = None) -> str:
    """UTC time as ISO 8601 to the second, ``...Z``."""
    return (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z")


class Session:
    """The ledger and memo as read at the start; writing them needs the lock."""

    def __init__(self, state: LocalState, ledger: Ledger, memo: Memo, locked: bool) -> None:
        self.state = state
        self.ledger = ledger
        self.memo = memo
        self.locked = locked

    def kept(self, target: str, survey: pb.Survey) -> dict[str, Kept]:
        """The reports kept for the survey's questions at ``target``, by question id.

        Raises:
            RefusedError: a question is no longer the one its kept report was drawn for
                (its kind, options or mechanism changed): answering it again would put a
                second report about the same answer in the aggregator's hands.
        """
        aggregator = aggregator_name(target)
        found = {}
        for question in survey.questions:
            kept = self.memo.get(aggregator, survey.id, question.id)
            if kept is None:
                continue
            if not kept.fits(question):
                raise RefusedError(
                    f"question {question.id!r} of survey {survey.id} at {aggregator} is not the "
                    f"question your report for it was drawn for on {kept.drawn_at} (its options "
                    "or mechanism changed). A second report about the same answer would tell "
                    "the aggregator more than its epsilon says; refusing to answer, nothing "
                    "was sent. Ask the survey's organizer why the question changed"
                )
            found[question.id] = kept
        return found

    def plan(
        self,
        target: str,
        survey: pb.Survey,
        specs: Mapping[str, Mechanism],
        answers: Mapping[str, Answer],
        rng: np.random.Generator | None = None,
        now: datetime | None = None,
    ) -> Plan:
        """Each question's kept report, or a fresh one drawn from its answer.

        A question with a kept report sends that report whatever ``answers`` holds for it:
        fresh draws about the same answer could be averaged to reveal it.

        Raises:
            RefusedError: see :meth:`kept`.
            InvalidAnswerError: a question without a kept report has no answer.
        """
        aggregator = aggregator_name(target)
        kept, twins = self.kept(target, survey), self.twins(target, survey)
        charged = {charge.report_id for charge in self.ledger.of(aggregator, survey.id)}
        paid = self.ledger.draws()
        first_asked = repeats(survey.questions)
        drawn_at = now_utc(now)
        planned: dict[str, PreparedReport] = {}
        for question in survey.questions:
            spec, before = specs[question.id], kept.get(question.id)
            twin = twins.get(question.id)
            if before is not None:
                item = PreparedReport(
                    before.report,
                    spec,
                    reused=True,
                    charged=before.report.report_id in charged,
                    drawn_at=before.drawn_at,
                    sent_at=before.sent_at,
                    paid=before.drawn in paid,
                    draw=before.draw,
                )
            elif twin is not None or question.id in first_asked:
                earlier = planned.get(first_asked.get(question.id, ""))
                source = _source(twin, earlier, paid, spec)
                report = copy_report(source.report, survey.id, question, rng)
                item = PreparedReport(
                    report,
                    spec,
                    reused=source.reused,
                    charged=report.report_id in charged,
                    drawn_at=source.drawn_at,
                    paid=source.paid,
                    draw=None if source.drawn == report.report_id else source.drawn,
                )
            elif question.id not in answers:
                raise InvalidAnswerError(f"no answer for question {question.id!r}")
            else:
                fresh = build_report(survey.id, question, spec, answers[question.id], rng)
                item = dataclasses.replace(fresh, drawn_at=drawn_at)
            planned[question.id] = item
        return Plan(
            aggregator,
            survey.id,
            tuple(planned.values()),
            device_before=self.ledger.total(),
            aggregator_before=self.ledger.spent(aggregator),
            aggregator_draws=frozenset(self.ledger.draws(aggregator)),
        )

    def twins(self, target: str, survey: pb.Survey) -> dict[str, Kept]:
        """For questions without a report kept here: one kept for the same question elsewhere.

        Elsewhere is another survey, another aggregator, or another name of this one; the
        same question is the same content (:func:`content_of`). Asking it again gets that
        report's value, never a fresh draw.
        """
        aggregator = aggregator_name(target)
        found = {}
        for question in survey.questions:
            if self.memo.get(aggregator, survey.id, question.id) is None:
                twin = self.memo.twin(content_of(question))
                if twin is not None:
                    found[question.id] = twin
        return found

    def keep(self, plan: Plan, survey: pb.Survey) -> None:
        """Keep the plan's reports not kept yet durably, before they are shown or sent."""
        self._require_lock()
        questions = {question.id: question for question in survey.questions}
        fresh = [
            Kept(
                plan.aggregator,
                item.report,
                definition_of(questions[item.report.question_id]),
                at,
                content=content_of(questions[item.report.question_id]),
                draw=item.draw,
            )
            for item in plan.prepared
            if (at := item.drawn_at) is not None
            and self.memo.get(plan.aggregator, plan.survey_id, item.report.question_id) is None
        ]
        if fresh:
            self.memo = self.memo.add(fresh)
            save_memo(self.state.memo_path, self.memo)

    def commit(self, plan: Plan, now: datetime | None = None) -> None:
        """Charge the ledger for every report not charged before; durable before any send.

        Charging before sending means a crash can only over-count, never under-count.
        """
        self._require_lock()
        at = now_utc(now)
        charges = [
            Charge(
                plan.aggregator,
                plan.survey_id,
                item.report.question_id,
                item.mechanism.name,
                item.mechanism.epsilon,
                item.report.report_id,
                at,
                draw=item.drawn,
            )
            for item in plan.prepared
            if not item.charged
        ]
        if charges:
            self.ledger = self.ledger.add(charges)
            save_ledger(self.state.ledger_path, self.ledger)

    def mark_sent(self, plan: Plan, now: datetime | None = None) -> None:
        """Record that the aggregator acknowledged the plan's reports."""
        self._require_lock()
        keys = [(plan.aggregator, r.report.survey_id, r.report.question_id) for r in plan.prepared]
        memo = self.memo.mark_sent(keys, now_utc(now))
        if memo != self.memo:
            self.memo = memo
            save_memo(self.state.memo_path, self.memo)

    def _require_lock(self) -> None:
        if not self.locked:
            raise RuntimeError("writing needs a session opened with write=True")


class LocalState:
    """The participant's files in the data directory: ledger, memo and lock."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or data_dir()
        self.ledger_path = self.directory / LEDGER_NAME
        self.memo_path = self.directory / MEMO_NAME
        self.lock_path = self.directory / LOCK_NAME

    def read_ledger(self) -> Ledger:
        """The ledger (read-only, no lock: files are only ever replaced whole)."""
        return load_ledger(self.ledger_path)

    @contextmanager
    def session(
        self, *, write: bool, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[Session]:
        """Read the ledger and memo; with ``write``, under the lock, to change them.

        A read-only session takes no lock and creates no file.

        Raises:
            LocalStateError: a file is unreadable (fail closed: nothing is reset).
        """
        if not write:
            yield self._open(locked=False)
            return
        with exclusive_lock(self.lock_path, on_wait):
            yield self._open(locked=True)

    def _open(self, *, locked: bool) -> Session:
        ledger = load_ledger(self.ledger_path)
        return Session(self, ledger, load_memo(self.memo_path, ledger), locked)
