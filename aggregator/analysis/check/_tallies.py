"""Recomputing every question's tally from the report log, and comparing it with the stored one.

A stepped question's released tally must also be the tally after some log row: a release
is written in the transaction of the batch that reached it.

The recomputation runs the ingest path's own code on each log row, so the two cannot
drift: a row is decoded as a received batch is and each group of reports replayed against
its question, read and tallied by its mechanism, by ``storage.replay_group`` as the daemon
does (``storage.StoredSurvey``).

Memory: the tallies, plus 8 bytes per report id for the duplicate check (its keyed
fingerprint). A survey with more than ``ids_per_pass`` reports is checked for duplicates
in several passes over its log, each holding one slice of the fingerprints; ids whose
fingerprints collide are then compared in full in one more pass.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.check._report import (
    CheckReport,
    QuestionCheck,
    SurveyCheck,
    padded,
)
from deniable.aggregator.storage import StoredSurvey, Tally
from deniable.aggregator.storage.codec import DecodedBatch, ReportIds, decode_log, decode_row
from deniable.shared.errors import AggregatorError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["CheckReport", "LogSource", "QuestionCheck", "SurveyCheck", "check"]

IDS_PER_PASS = 8_000_000  # fingerprints held at once: 64 MB
MAX_PASSES = 64  # a damaged tally must not make the check read the log forever
MAX_EXAMPLES = 5  # repeated ids named per survey


class LogSource(Protocol):
    """What the check reads; all of it must come from one consistent snapshot."""

    def surveys(self) -> list[tuple[str, int, bytes]]:
        """Each survey's id, state and serialized ``Survey``, in creation order."""

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """The stored running tallies by (survey id, question id)."""

    def releases(self) -> dict[tuple[str, str], Tally]:
        """The tallies last released for stepped questions, by (survey id, question id)."""

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        """The survey's log rows as (sequence number, stored bytes), in commit order."""


def _same(tally: Tally, other: Tally | None) -> bool:
    """Equal counts and sums, a missing sum counting as zero."""
    if other is None or tally.n != other.n:
        return False
    length = max(len(tally.sums), len(other.sums))
    return padded(tally.sums, length) == padded(other.sums, length)


def check(
    source: LogSource,
    *,
    ids_per_pass: int = IDS_PER_PASS,
    progress: Callable[[str], None] = lambda message: None,
) -> CheckReport:
    """Recompute every question's tally from ``source``'s log and look for repeated ids."""
    if ids_per_pass < 1:
        raise ValueError(f"ids_per_pass must be >= 1, got {ids_per_pass}")
    stored: dict[str, dict[str, Tally]] = {}
    for (survey_id, question_id), tally in source.tallies().items():
        stored.setdefault(survey_id, {})[question_id] = tally
    released: dict[str, dict[str, Tally]] = {}
    for (survey_id, question_id), tally in source.releases().items():
        released.setdefault(survey_id, {})[question_id] = tally
    surveys = source.surveys()
    results = []
    for index, (survey_id, state, spec) in enumerate(surveys, start=1):
        progress(f"survey {index}/{len(surveys)} {survey_id}: reading its log")
        tallies = stored.get(survey_id, {})
        checker = _SurveyChecker(source, survey_id, state, spec, tallies)
        checker.released = released.get(survey_id, {})
        result = checker.run(ids_per_pass)
        progress(
            f"survey {index}/{len(surveys)} {survey_id}: {result.log_rows:,} log rows, "
            f"{result.reports:,} reports, {'ok' if result.ok else 'MISMATCH'}"
        )
        results.append(result)
    return CheckReport(results)


class _SurveyChecker:
    """Recomputes one survey's tallies and counts its repeated report ids."""

    def __init__(
        self,
        source: LogSource,
        survey_id: str,
        state: int,
        spec: bytes,
        stored: dict[str, Tally],
    ) -> None:
        self.source = source
        self.survey = pb.Survey.FromString(spec)
        self.result = SurveyCheck(survey_id, self.survey.title, state)
        self.stored = stored  # the survey's stored tallies by question id
        self.replayed = StoredSurvey(self.survey)
        self.questions = self.replayed.questions
        self.recomputed = {qid: Tally(0) for qid in self.questions}
        self.released: dict[str, Tally] = {}  # the stored releases, by question id
        self.release_seen: set[str] = set()  # questions whose release a prefix matched

    def run(self, ids_per_pass: int) -> SurveyCheck:
        expected = sum(tally.n for tally in self.stored.values())  # only sizes the passes
        passes = min(MAX_PASSES, max(1, math.ceil(expected / ids_per_pass)))
        prints: list[NDArray[np.uint64]] = []
        for seq, row in self.source.log(self.result.survey_id):
            batch = self._tally_row(seq, row)
            if batch is not None:
                prints.extend(_slice(_prints(batch.report_ids), passes, 0))
        candidates = [_repeated(prints)]
        for part in range(1, passes):
            prints = []
            for _, row in self.source.log(self.result.survey_id):
                prints.extend(_slice(_row_prints(row), passes, part))
            candidates.append(_repeated(prints))
        collisions = np.concatenate(candidates)
        if collisions.size:
            self._count_duplicates(collisions)
        for qid in self.questions:
            self.result.questions.append(
                QuestionCheck(qid, self.stored.get(qid), self.recomputed[qid])
            )
        for qid in sorted(set(self.stored) - set(self.questions)):
            self.result.problems.append(f"tally row for question {qid!r}, which the survey lacks")
        for qid, tally in sorted(self.released.items()):
            if tally.n and qid not in self.release_seen:
                self.result.problems.append(
                    f"released tally of question {qid!r} ({tally.n:,} reports) is the tally "
                    "of no commit in the log"
                )
        return self.result

    def _tally_row(self, seq: int, row: bytes) -> DecodedBatch | None:
        """Add one log row's reports to the recomputed tallies; its decoded batch, if any.

        A row stores one committed batch, so it counts all or nothing: a row with a report
        that does not fit the survey adds nothing (and is reported), though its ids still
        take part in the duplicate check.
        """
        self.result.log_rows += 1
        try:
            batch = decode_row(row)
        except (ValueError, AggregatorError) as error:  # LogFormatError is a ValueError
            self.result.problems.append(f"log row {seq} cannot be decoded: {error}")
            return None
        self.result.reports += batch.size
        repeats = batch.size - len(batch.report_ids)
        if repeats:
            self.result.duplicates += repeats
            self.result.problems.append(f"log row {seq} repeats {repeats} report ids within it")
        contributions: list[tuple[str, int, list[int]]] = []
        for group in batch.groups:
            try:
                replayed = self.replayed.replay(group, batch.positions)
            except (ValueError, AggregatorError) as error:
                self.result.problems.append(f"log row {seq}: {error}")
                return batch
            assert replayed.mechanism is not None  # a replayed group is read
            tally = replayed.mechanism.tally(replayed.reports)
            contributions.append((replayed.question_id, len(group.rows), tally))
        for qid, n, tally in contributions:
            old = self.recomputed[qid]
            self.recomputed[qid] = old.plus(n, tally)
            if _same(self.recomputed[qid], self.released.get(qid)):
                self.release_seen.add(qid)
        return batch

    def _count_duplicates(self, collisions: NDArray[np.uint64]) -> None:
        """Compare in full the ids whose fingerprints collide; count the true repeats."""
        seen: Counter[bytes] = Counter()
        for _, row in self.source.log(self.result.survey_id):
            try:
                ids, _ = decode_log(row)
            except (ValueError, AggregatorError):
                continue  # reported when tallying
            for group in ids.groups:
                for at in np.flatnonzero(np.isin(group.fingerprints, collisions)).tolist():
                    seen[group.ids[at].tobytes()] += 1
        repeated = sorted(report_id for report_id, count in seen.items() if count > 1)
        self.result.duplicates += sum(seen[report_id] - 1 for report_id in repeated)
        self.result.duplicate_ids = [r.decode("ascii") for r in repeated[:MAX_EXAMPLES]]


def _prints(report_ids: ReportIds) -> list[NDArray[np.uint64]]:
    """The keyed fingerprints of a batch's report ids, one array per id length.

    They are copies, so that holding them does not hold the decoded batch.
    """
    return [np.array(group.fingerprints, dtype=np.uint64) for group in report_ids.groups]


def _row_prints(row: bytes) -> list[NDArray[np.uint64]]:
    try:
        ids, _ = decode_log(row)
    except (ValueError, AggregatorError):
        return []  # reported when tallying
    return _prints(ids)


def _slice(prints: list[NDArray[np.uint64]], passes: int, part: int) -> list[NDArray[np.uint64]]:
    """The fingerprints that belong to pass ``part`` of ``passes``."""
    if passes == 1:
        return prints
    return [p[p % np.uint64(passes) == np.uint64(part)] for p in prints]


def _repeated(prints: list[NDArray[np.uint64]]) -> NDArray[np.uint64]:
    """The fingerprints that occur more than once."""
    if not prints:
        return np.zeros(0, dtype=np.uint64)
    ordered = np.sort(np.concatenate(prints))
    return np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
