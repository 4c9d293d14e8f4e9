"""Copying surveys, reports, tallies and enrollment between databases (``migrate``).

The source is read in one snapshot (:class:`SqliteReader` or :class:`PostgresReader`).
The target is written through its own :class:`Storage` methods: each survey is created,
its tokens issued, and each of its log rows replayed with ``Storage.submit`` as one
batch, as the daemon ingests batches: the target rebuilds report ids, tallies and
releases with its own code, and a stepped question releases at the same points, since
a log row is one committed batch. Then the enrollment bindings are restored and a closed
survey closed. The replayed tallies and releases must equal the source's stored ones,
or the copy is refused.

All or nothing: on PostgreSQL every call runs in one transaction; a SQLite target is
built in a staging file beside it (a copy of the target, if it exists) that replaces it
when complete. Memory is bounded: log rows are streamed and submitted one at a time,
tokens and bindings in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from deniable.aggregator.storage._base import StorageError, Submission, SubmitOutcome, Tally
from deniable.aggregator.storage._replay import StoredSurvey
from deniable.aggregator.storage._url import POSTGRES_EXTRA
from deniable.aggregator.storage.codec import decode_row
from deniable.shared.errors import AggregatorError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "CopyRefusedError",
    "CopySource",
    "CopySummary",
    "CopyTarget",
    "copy",
    "source_reports",
    "writing",
]

Binding = tuple[bytes, str, str, str, bytes]  # token, question, survey, report id, digest
CHUNK = 10_000  # tokens or bindings written at a time
T = TypeVar("T")


class CopyRefusedError(Exception):
    """The copy was not made: the target holds data, or the source's tallies do not replay."""


class CopySource(Protocol):
    """What the copy reads, all from one snapshot."""

    name: str

    def surveys(self) -> list[tuple[str, int, bytes]]:
        """Each survey's id, state and serialized ``Survey``, in creation order."""

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """The stored tallies by (survey id, question id)."""

    def releases(self) -> dict[tuple[str, str], Tally]:
        """The stored releases of stepped questions by (survey id, question id)."""

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        """The survey's log rows as (sequence number, stored bytes), in commit order."""

    def token_hashes(self, survey_id: str) -> Iterator[bytes]:
        """The hashes of the survey's issued tokens."""

    def bindings(self, survey_id: str) -> Iterator[Binding]:
        """The survey's (token, question) -> report bindings."""


class CopyTarget(Protocol):
    """The :class:`Storage` methods the copy calls, and the restoring of bindings."""

    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order."""

    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new open survey."""

    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of an open survey's new tokens."""

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Store a batch's new reports and update tallies."""

    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Close a survey."""

    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """A question's tally."""

    def released(self, survey_id: str, question_id: str) -> Tally | None:
        """A stepped question's last release."""

    def restore_bindings(self, bindings: Sequence[Binding]) -> None:
        """Store bindings copied from another database."""


@dataclass(frozen=True)
class CopySummary:
    """What a copy stored: surveys, log rows (batches), reports, tokens and bindings."""

    surveys: int
    log_rows: int
    reports: int
    tokens: int
    bindings: int


def copy(
    source: CopySource,
    target: CopyTarget,
    *,
    target_name: str,
    allow_non_empty: bool = False,
    progress: Callable[[int], None] = lambda reports: None,
) -> CopySummary:
    """Copy every survey of ``source`` into ``target`` (inside the caller's transaction).

    ``progress`` is called after each replayed log row with the reports it stored (of
    :func:`source_reports` in all).

    Raises:
        CopyRefusedError: the target holds surveys (and ``allow_non_empty`` is false) or one
            with the id of a source survey; a log row does not replay (a report that
            does not fit its survey, or a report id stored before); the replayed tallies
            or releases differ from the source's stored ones.
    """
    existing = [survey.id for survey in target.list_surveys(include_closed=True)]
    surveys = source.surveys()
    if existing and not allow_non_empty:
        raise CopyRefusedError(
            f"the target {target_name} is not empty: it holds {len(existing):,} "
            f"survey{'s' if len(existing) != 1 else ''} (first {existing[0]!r}); copy into "
            "an empty database, or pass --into-non-empty to add the source's surveys"
        )
    both = sorted(set(existing) & {survey_id for survey_id, _, _ in surveys})
    if both:
        raise CopyRefusedError(
            f"survey {both[0]!r} exists in both the source {source.name} and the target "
            f"{target_name}"
            + (f" ({len(both):,} surveys do)" if len(both) > 1 else "")
            + "; nothing was copied"
        )
    stored, released = source.tallies(), source.releases()
    totals = [0, 0, 0, 0]
    for _survey_id, state, spec in surveys:
        copier = _SurveyCopy(source, target, pb.Survey.FromString(spec), progress)
        copier.run(state)
        copier.verify(stored, released)
        for i, count in enumerate((copier.log_rows, copier.reports, copier.tokens, copier.bound)):
            totals[i] += count
    return CopySummary(len(surveys), *totals)


def source_reports(source: CopySource) -> int:
    """The reports a copy of ``source`` replays: its stored tallies' counts, summed."""
    return sum(tally.n for tally in source.tallies().values())


class _SurveyCopy:
    """Copies one survey: creates it, issues its tokens, replays its log, restores the rest."""

    def __init__(
        self,
        source: CopySource,
        target: CopyTarget,
        survey: pb.Survey,
        progress: Callable[[int], None],
    ) -> None:
        self.source = source
        self.target = target
        self.survey = survey
        self.progress = progress
        self.stored = StoredSurvey(survey)
        self.log_rows = self.reports = self.tokens = self.bound = 0

    def run(self, state: int) -> None:
        survey_id = self.survey.id
        self.survey.state = pb.SURVEY_STATE_OPEN
        self.target.create_survey(self.survey)
        for hashes in _chunks(self.source.token_hashes(survey_id)):
            self.target.issue_tokens(survey_id, hashes)
            self.tokens += len(hashes)
        for seq, row in self.source.log(survey_id):
            self._replay(seq, row)
        for bindings in _chunks(self.source.bindings(survey_id)):
            self.target.restore_bindings(bindings)
            self.bound += len(bindings)
        if state == pb.SURVEY_STATE_CLOSED:
            self.target.close_survey(survey_id)

    def _replay(self, seq: int, row: bytes) -> None:
        """Submit one log row to the target as the batch it was."""
        where = f"log row {seq} of survey {self.survey.id!r}"
        try:
            batch = decode_row(row)
            groups = self.stored.groups(batch)
        except (ValueError, AggregatorError) as error:
            raise CopyRefusedError(f"{where} cannot be replayed: {error}") from None
        submission = Submission(
            batch.report_ids, batch.payloads, groups, batch.encode, batch.positions
        )
        outcome = self.target.submit(submission)
        if outcome.already_stored or batch.size != len(batch.report_ids):
            raise CopyRefusedError(f"{where} repeats a report id stored before; run check on it")
        self.log_rows += 1
        self.reports += outcome.stored
        self.progress(outcome.stored)

    def verify(
        self, stored: dict[tuple[str, str], Tally], released: dict[tuple[str, str], Tally]
    ) -> None:
        """Refuse unless every replayed tally and release equals the source's stored one."""
        for question_id in self.stored.questions:
            key = (self.survey.id, question_id)
            for what, want, got in (
                ("tally", stored.get(key), self.target.tally(*key)),
                ("release", released.get(key, Tally(0)), self.target.released(*key)),
            ):
                if want is None or got is None or not _same(want, got):
                    raise CopyRefusedError(
                        f"survey {key[0]!r} question {key[1]!r}: the replayed {what} "
                        f"{_shown(got)} differs from the source's stored {_shown(want)}; run "
                        f"check on {self.source.name}; nothing was copied"
                    )


def _same(one: Tally, other: Tally) -> bool:
    """Equal counts and sums, a missing sum counting as zero."""
    width = max(len(one.sums), len(other.sums))
    pad = (0,) * width
    return one.n == other.n and (one.sums + pad)[:width] == (other.sums + pad)[:width]


def _shown(tally: Tally | None) -> str:
    return "(none)" if tally is None else f"(n={tally.n:,}, sums={list(tally.sums)})"


def _chunks(items: Iterator[T]) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@contextmanager
def writing(url: str) -> Iterator[tuple[CopyTarget, str]]:
    """The target backend and its name for messages; kept only if the block ends normally.

    PostgreSQL: every call inside runs in one transaction. SQLite (``sqlite:///PATH``):
    the calls go to a staging copy of ``PATH`` (``PATH.migrating``; the lock file
    ``PATH.lock`` is held meanwhile, so no daemon can open it), which replaces ``PATH``
    when the block ends normally and is deleted otherwise.

    Raises:
        ValueError: an unsupported URL.
        StorageError: the target cannot be opened or written (nothing of the block is kept).
    """
    if url.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg

            from deniable.aggregator.storage.postgres import PostgresStorage, redacted
        except ImportError:
            raise StorageError(POSTGRES_EXTRA) from None
        storage = PostgresStorage(url)
        try:
            with storage.single_transaction():
                yield storage, redacted(url)
        except psycopg.Error as error:  # e.g. the server went away: rolled back
            raise StorageError(
                f"cannot write PostgreSQL database {redacted(url)!r}: {error}; nothing was copied"
            ) from None
        finally:
            storage.close()
        return
    from deniable.aggregator.storage.sqlite import staged

    with staged(url) as (staging, path):
        yield staging, path
