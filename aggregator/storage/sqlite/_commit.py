"""SQLite storage's commit of a group: claim the ids, append the log rows, bump the tallies."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._base import Selection, Submission, SubmitOutcome, Tally
from deniable.aggregator.storage._survey_cap import CapCheck, caps_of
from deniable.aggregator.storage.sqlite._group_read import read_groups
from deniable.aggregator.storage.sqlite._reads import SqliteReads
from deniable.aggregator.storage.sqlite._tally_change import TallyChange
from deniable.aggregator.storage.sqlite._tokens import (
    Binding,
    PendingBindings,
    bind,
    store_bindings,
)
from deniable.aggregator.storage.sqlite._transaction import rollback, storage_error
from deniable.aggregator.storage.sqlite.index import Claim, GroupClaim, IdIndex, Maintenance
from deniable.shared.errors import FailedPrecondition

__all__ = ["SqliteCommits"]

_logger = logging.getLogger("deniable.aggregator")

_ALL = np.s_[:]  # every row of a group: a view, not a copy


class SqliteCommits(SqliteReads):
    """The commit of a group of batches, under the storage's lock (a part of SqliteStorage).

    Holds no state of its own: the connection, the id index, the maintenance and the
    tallies known in memory are the storage's.
    """

    _db: sqlite3.Connection
    _index: IdIndex
    _maintenance: Maintenance
    _tallies: dict[tuple[str, str], Tally]
    _released: dict[tuple[str, str], Tally]

    def _commit_locked(
        self, submissions: Sequence[Submission]
    ) -> list[SubmitOutcome | BaseException]:
        """Sort each batch's reports into new and stored, then store them in one transaction.

        A batch refused while its reports are sorted (a closed survey, a conflicting id,
        or for a batch with an enrollment token a conflicting binding) gets its own error
        and takes no part in the transaction; if the transaction fails, every batch in it
        gets that error and none of its ids is entered in the index.
        """
        reads, unreadable = read_groups(submissions)
        errors, claimed, group, bindings = self._claim_locked(submissions, unreadable)
        results: list[SubmitOutcome | BaseException] = [RuntimeError("not committed")] * len(
            submissions
        )
        for position, error in errors.items():
            results[position] = error
        accepted: list[tuple[int, int, Claim]] = []
        for place, (position, claim) in enumerate(zip(claimed, group.claims, strict=True)):
            if isinstance(claim, Claim):
                accepted.append((place, position, claim))
            else:
                results[position] = claim
        if not accepted:
            return results
        changes: dict[tuple[str, str], TallyChange] = {}
        released: dict[tuple[str, str], Tally] = {}
        seqs: list[dict[str, int] | None] = [None] * len(claimed)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for place, position, claim in accepted:
                seqs[place] = self._append_locked(claim, changes, released, reads, position)
                store_bindings(self._db, bindings[position])
            tallies = {key: change.tally() for key, change in changes.items()}
            self._write_tallies(tallies, released)
            self._db.execute("COMMIT")
        except BaseException as error:  # nothing of the group is stored nor entered
            rollback(self._db)
            raise storage_error(error) from None
        try:
            self._index.enter(group, seqs)
        except Exception:  # committed all the same: refuse batches from now on instead
            _logger.exception("entering report ids failed; restart the daemon")
            self._index.broken = True
        self._maintenance.committed(group.parts)
        self._tallies.update(tallies)  # only once committed
        self._released.update(released)
        for _, position, claim in accepted:
            results[position] = SubmitOutcome(claim.stored, claim.total - claim.stored)
        return results

    def _claim_locked(
        self, submissions: Sequence[Submission], refused: dict[int, BaseException]
    ) -> tuple[dict[int, BaseException], list[int], GroupClaim, dict[int, list[Binding]]]:
        """Sort the group's batches into new and stored reports; token batches' bindings.

        Returns the batches refused by their bindings, the positions of the others (in
        order), their group claim, and each one's new bindings. A token batch's bindings
        are checked first (so that another report for an answered question is refused as
        such), in order, each seeing the earlier batches'. If the id claim then refuses a
        token batch, the batches after it were checked against bindings that will not be
        stored: both steps run again without it. ``refused``: batches refused already
        (for a value), left out.
        """
        refused = dict(refused)  # and the token batches the id claim refuses
        while True:
            errors = dict(refused)
            pending = PendingBindings()
            bindings: dict[int, list[Binding]] = {}
            for position, submission in enumerate(submissions):
                if position in errors:
                    continue
                try:
                    bindings[position] = self._bind_locked(submission, pending)
                except Exception as error:
                    errors[position] = error
                    continue
                pending.add(bindings[position])
            claimed = [position for position in range(len(submissions)) if position not in errors]
            group = self._index.claim(self._db, [submissions[p] for p in claimed])
            unbound = {
                position: claim
                for position, claim in zip(claimed, group.claims, strict=True)
                if isinstance(claim, BaseException) and bindings[position]
            }
            unbound.update(self._over_cap_locked(claimed, group))
            if not unbound:
                return errors, claimed, group, bindings
            refused.update(unbound)

    def _over_cap_locked(
        self, claimed: Sequence[int], group: GroupClaim
    ) -> dict[int, BaseException]:
        """The claimed batches that would take a survey past its ``max_reports``.

        Checked in commit order against the survey's count in the database (no other
        process writes it: the lock file) plus the earlier batches' new reports. A
        refused batch's ids were claimed, so the claim runs again without it.
        """
        caps = CapCheck(self._survey_count)
        over: dict[int, BaseException] = {}
        for position, claim in zip(claimed, group.claims, strict=True):
            if not isinstance(claim, Claim) or not caps_of(claim.submission.groups):
                continue
            new = {survey_id: len(claim.new_rows(survey_id)) for survey_id in claim.rows}
            error = caps.admit(claim.submission, new)
            if error is not None:
                over[position] = error
        return over

    def _survey_count(self, survey_id: str) -> int:
        (count,) = self._db.execute(
            "SELECT COALESCE(SUM(n), 0) FROM tallies WHERE survey_id = ?", (survey_id,)
        ).fetchone()
        return int(count)

    def _bind_locked(self, submission: Submission, pending: PendingBindings) -> list[Binding]:
        """A token batch's new (token, question) bindings, checked before its ids are sorted.

        Checked first, so that a different report for an answered question is refused as
        such (naming the question) even when it reuses the first report's id.
        """
        if submission.token_hash is None:
            return []
        for group in submission.groups:
            if group.survey_id not in self._index:
                first = submission.positions[int(group.rows[0])]
                raise FailedPrecondition(f"reports[{first}]: survey {group.survey_id!r} is closed")
        return bind(self._db, submission, pending)

    def _append_locked(
        self,
        claim: Claim,
        changes: dict[tuple[str, str], TallyChange],
        released: dict[tuple[str, str], Tally],
        reads: dict[tuple[int, int], Any],
        position: int,
    ) -> dict[str, int]:
        """Write a batch's log rows; add its reports to the group's tally changes.

        A release due after this batch is the tally then (computed at once, in memory).
        ``reads``: the reports of unread groups (:func:`read_groups`), by (batch at
        ``position``, group). Returns each survey's new log row.
        """
        submission, fresh = claim.submission, claim.fresh
        seqs: dict[str, int] = {}
        for index, group in enumerate(submission.groups):
            keep: Selection
            if fresh is None:
                keep, count = _ALL, len(group.rows)
            else:
                keep = fresh[group.rows]
                count = int(np.count_nonzero(keep))
                if not count:
                    continue
            key = (group.survey_id, group.question_id)
            change = changes.get(key)
            if change is None:
                change = changes[key] = TallyChange(self._tallies.get(key) or self._read_tally(key))
            change.add(group, keep, count, reads.get((position, index)))
            if group.releases is not None:
                last = released.get(key) or self._released.get(key) or self._read_released(key)
                if group.releases.due(last.n, change.n):
                    released[key] = change.tally()
        for survey_id in claim.rows:
            rows: NDArray[np.intp] = claim.new_rows(survey_id)
            if len(rows):
                cursor = self._db.execute(
                    "INSERT INTO log (survey_id, reports) VALUES (?, ?)",
                    (survey_id, submission.encode(rows)),
                )
                assert cursor.lastrowid is not None
                seqs[survey_id] = cursor.lastrowid
        return seqs

    def _write_tallies(
        self, tallies: dict[tuple[str, str], Tally], released: dict[tuple[str, str], Tally]
    ) -> None:
        """One row per question the group changed: its tally, and its release if one is due.

        A release is the tally after the batch that reached its point, or after a later
        batch of the same commit; either way a tally the question has at a commit.
        """
        self._db.executemany(
            "UPDATE tallies SET n = ?, sums = ? WHERE survey_id = ? AND question_id = ?",
            [(new.n, json.dumps(new.sums), *key) for key, new in tallies.items()],
        )
        if released:
            self._db.executemany(
                "INSERT OR REPLACE INTO releases (survey_id, question_id, n, sums) "
                "VALUES (?, ?, ?, ?)",
                [(*key, new.n, json.dumps(new.sums)) for key, new in released.items()],
            )
