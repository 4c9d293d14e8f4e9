"""Guardrails around sending: memoized reports, the budget check, and charging before sending."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from deniable.client._answer import Answer, PreparedReport, build_report
from deniable.client._errors import RefusedError
from deniable.client._files import LOCK_NAME, data_dir, exclusive_lock, unreadable
from deniable.client._ledger import (
    LEDGER_NAME,
    Charge,
    Ledger,
    aggregator_name,
    load_ledger,
    save_ledger,
)
from deniable.client._memo import (
    KEY_NAME,
    MEMO_NAME,
    Memo,
    load_memo,
    load_secret,
    memo_key,
    save_memo,
)
from deniable.client._policy import Policy, round_down, round_up
from deniable.shared.mechanisms import Mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["LocalState", "Plan", "Session"]


@dataclass(frozen=True)
class Plan:
    """The reports one answer sends: memoized ones resent for free, fresh ones charged.

    ``keys`` are the reports' memo keys (None in a dry run before any secret exists);
    ``spent`` lists the ε already charged at the aggregator.
    """

    aggregator: str
    survey_id: str
    prepared: tuple[PreparedReport, ...]
    keys: tuple[str | None, ...]
    spent: tuple[float, ...]

    @property
    def cost(self) -> float:
        """The ε this answer adds to the ledger (reused reports cost nothing)."""
        return math.fsum(item.cost for item in self.prepared)

    @property
    def spent_before(self) -> float:
        """ε spent at the aggregator before this answer."""
        return math.fsum(self.spent)

    @property
    def spent_after(self) -> float:
        """ε spent at the aggregator once this answer is charged, summed exactly."""
        return math.fsum([*self.spent, *(item.cost for item in self.prepared)])

    def check_budget(self, policy: Policy) -> None:
        """Refuse, before anything is sent, an answer that would take the total over budget.

        Raises:
            RefusedError: the message says by how much, and how to raise the budget.
        """
        if self.cost == 0 or self.spent_after <= policy.budget:
            return
        left = policy.budget - self.spent_before
        raise RefusedError(
            f"answering would spend epsilon {round_up(self.cost)} at {self.aggregator}, but "
            f"only {round_down(left)} of your budget of {policy.budget!r} "
            f"({policy.source('budget')}) is left there ({round_up(self.spent_before)} spent): "
            f"{round_up(self.spent_after - policy.budget)} over budget; refusing to answer, "
            f"nothing was sent. See 'deniable budget'; to accept more privacy loss, raise the "
            f"budget with {policy.how_to_change('budget')}"
        )


class Session:
    """The ledger, memo and secret as read at the start; ``commit`` needs the lock."""

    def __init__(
        self, state: LocalState, ledger: Ledger, memo: Memo, secret: bytes | None, locked: bool
    ) -> None:
        self.state = state
        self.ledger = ledger
        self.memo = memo
        self.secret = secret
        self.locked = locked

    def plan(
        self,
        target: str,
        survey: pb.Survey,
        specs: Mapping[str, Mechanism],
        answers: Mapping[str, Answer],
        rng: np.random.Generator | None = None,
    ) -> Plan:
        """Reuse the memoized report of each answer given before; perturb the others afresh."""
        aggregator = aggregator_name(target)
        prepared, keys = [], []
        for question in survey.questions:
            spec, answer = specs[question.id], answers[question.id]
            key = None
            if self.secret is not None:
                key = memo_key(self.secret, aggregator, survey.id, question, answer)
            report = self.memo.get(key) if key else None
            if report is None:
                prepared.append(build_report(survey.id, question, spec, answer, rng))
            else:
                self._check_memoized(report, survey.id, question)
                prepared.append(PreparedReport(report, spec, reused=True))
            keys.append(key)
        spent = tuple(charge.epsilon for charge in self.ledger.of(aggregator))
        return Plan(aggregator, survey.id, tuple(prepared), tuple(keys), spent)

    def _check_memoized(self, report: pb.Report, survey_id: str, question: pb.Question) -> None:
        if (report.survey_id, report.question_id) != (survey_id, question.id) or (
            report.mechanism != question.mechanism
        ):
            raise unreadable(self.state.memo_path, "holds a report that does not fit its key")

    def commit(self, plan: Plan, now: datetime | None = None) -> None:
        """Charge the ledger, then memoize the fresh reports; both durable before any send.

        Charging first means a crash can only over-count: a charge without its memo entry
        makes a retry draw (and charge) a fresh report; a memo entry never exists uncharged.
        """
        if not self.locked or self.secret is None:
            raise RuntimeError("commit needs a session opened with write=True")
        at = (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z")
        fresh = [
            (item, key)
            for item, key in zip(plan.prepared, plan.keys, strict=True)
            if not item.reused
        ]
        if not fresh:
            return
        charges = [
            Charge(
                plan.aggregator,
                plan.survey_id,
                item.report.question_id,
                item.mechanism.name,
                item.mechanism.epsilon,
                item.report.report_id,
                at,
            )
            for item, _ in fresh
        ]
        self.ledger = self.ledger.add(charges)
        save_ledger(self.state.ledger_path, self.ledger)
        self.memo = self.memo.add({key: item.report for item, key in fresh if key is not None})
        save_memo(self.state.memo_path, self.memo)


class LocalState:
    """The participant's files in the data directory: ledger, memo, memo secret, lock."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or data_dir()
        self.ledger_path = self.directory / LEDGER_NAME
        self.memo_path = self.directory / MEMO_NAME
        self.key_path = self.directory / KEY_NAME
        self.lock_path = self.directory / LOCK_NAME

    def read_ledger(self) -> Ledger:
        """The ledger (read-only, no lock: files are only ever replaced whole)."""
        return load_ledger(self.ledger_path)

    @contextmanager
    def session(
        self, *, write: bool, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[Session]:
        """Read the ledger and memo; with ``write``, under the lock and with a secret.

        A read-only session (a dry run) takes no lock and creates no file.

        Raises:
            LocalStateError: a file is unreadable, or the secret is missing while the memo
                holds reports (fail closed: nothing is reset).
        """
        if not write:
            yield self._open(write=False)
            return
        with exclusive_lock(self.lock_path, on_wait):
            yield self._open(write=True)

    def _open(self, *, write: bool) -> Session:
        ledger = load_ledger(self.ledger_path)
        memo = load_memo(self.memo_path)
        secret = load_secret(self.key_path, create=False)
        if secret is None and memo.reports:
            raise unreadable(
                self.key_path,
                f"is missing, but {self.memo_path.name} holds {len(memo.reports)} memoized "
                "reports that only it can match",
            )
        if secret is None and write:
            secret = load_secret(self.key_path, create=True)
        return Session(self, ledger, memo, secret, locked=write)
