"""The storage interface every backend implements (one contract test suite covers all)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared.mechanisms import Mechanism
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb

Selection = NDArray[np.bool_] | slice  # a mask over a group's rows, or [:] for every row

__all__ = [
    "ReportGroup",
    "Selection",
    "Storage",
    "StorageError",
    "Submission",
    "SubmitOutcome",
    "Tally",
    "Unread",
]


class StorageError(Exception):
    """The database cannot be opened or used (in use, corrupt, or from a newer version)."""


@dataclass(frozen=True)
class Unread:
    """A group's values as received, left for the storage to read with its commit's others.

    Attributes:
        field: the value field the reports carry (one of the mechanism's accepted ones).
        values: the decoder's column of those values (see ``storage.codec.Group``).
    """

    field: str
    values: Any


@dataclass(frozen=True)
class ReportGroup:
    """The reports of one batch that answer one question.

    Attributes:
        survey_id: the survey the reports belong to.
        question_id: the question they answer.
        rows: their positions in the submission, ascending.
        tally: given a mask over ``rows`` (or the slice ``[:]`` for all of them), what
            those reports add to the question's running sums (for example the yes count,
            or one support count per option).
        releases: the survey's release steps, or None when its estimates are not stepped.
            The batch whose commit brings the question's tally to a release point stores
            a snapshot of it, in the same transaction (see :meth:`Storage.released`).
        mechanism: the question's mechanism, and ``reports`` the group's reports as it
            decoded them; when both are given, a backend may tally the reports of several
            batches in one call (``mechanism.tally(mechanism.join(...))``) instead of
            calling each group's ``tally``. The two must agree.
        reports: see ``mechanism``; indexable by a mask over ``rows``.
        unread: for a backend that reads values itself (:attr:`Storage.reads_values`),
            the values as received, not yet validated by ``mechanism``; ``reports`` and
            ``tally`` are then unused until the backend has read them.
        max_reports: the survey's ``max_reports`` (0: no limit), which the storage
            enforces in the batch's commit (see :meth:`Storage.submit`).
    """

    survey_id: str
    question_id: str
    rows: NDArray[np.intp]
    tally: Callable[[Selection], list[int]]
    releases: ReleaseSteps | None = None
    mechanism: Mechanism | None = None
    reports: Any = None
    unread: Unread | None = None
    max_reports: int = 0


@dataclass(frozen=True)
class Submission:
    """A validated batch, each distinct report once, in columns.

    Attributes:
        report_ids: the client-generated ids (ASCII bytes), unique within the submission.
        payloads: each report's canonical encoding without its id, to tell an exact resend
            from a different report that reuses an id.
        groups: the reports grouped by question; every row is in exactly one group.
        encode: the log encoding of the reports at the given rows: a serialized
            ``SubmitReportsRequest`` holding exactly those reports, in order.
        positions: each report's index in the request, for error messages.
        token_hash: None, or the SHA-256 hash of the batch's enrollment token. Then every
            report belongs to one survey and answers a different question, and the
            storage binds each (token, question) to its report for good, in the batch's
            transaction (see :meth:`Storage.submit`).
    """

    report_ids: Sequence[bytes]
    payloads: Sequence[bytes]
    groups: Sequence[ReportGroup]
    encode: Callable[[NDArray[np.intp]], bytes]
    positions: Sequence[int]
    token_hash: bytes | None = None


@dataclass(frozen=True)
class SubmitOutcome:
    """How many reports a batch newly stored, and how many were stored before."""

    stored: int
    already_stored: int


@dataclass(frozen=True)
class Tally:
    """Running tally of one question: ``n`` reports and the sums of their contributions.

    A yes/no question has one sum, the number of yes reports. ``sums`` is empty until the
    first report arrives.
    """

    n: int
    sums: tuple[int, ...] = ()

    @property
    def ones(self) -> int:
        """The first sum, or 0: the yes count of a yes/no question."""
        return self.sums[0] if self.sums else 0

    def plus(self, n: int, delta: Sequence[int]) -> Tally:
        """This tally with ``n`` more reports adding ``delta``; a missing sum counts as 0."""
        width = max(len(self.sums), len(delta))
        sums = tuple(
            (self.sums[i] if i < len(self.sums) else 0) + (int(delta[i]) if i < len(delta) else 0)
            for i in range(width)
        )
        return Tally(self.n + n, sums)


class Storage(ABC):
    """Surveys, the report log and running tallies.

    Every method is atomic. ``submit`` appends the new reports to the log and updates the
    tallies in one transaction, and returns only after the transaction is durable.

    Attributes:
        reads_values: whether :meth:`submit` takes groups whose values are unread
            (:class:`Unread`): it then validates them with the group's mechanism, all the
            batches of a commit at once, and refuses a batch with a bad value with
            InvalidArgument (naming the report and field).
    """

    reads_values: ClassVar[bool] = False

    @abstractmethod
    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new survey (open) with zero tallies for each question."""

    @abstractmethod
    def get_survey(self, survey_id: str) -> pb.Survey | None:
        """The survey with its state, report count and ``tokens_issued``, or None."""

    @abstractmethod
    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order."""

    @abstractmethod
    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (idempotent); None if it does not exist."""

    @abstractmethod
    def submit(self, submission: Submission) -> SubmitOutcome:
        """Store the reports not stored before, all or nothing, and update tallies.

        A report counts as stored before when its survey already holds its ``report_id``
        with the same payload.

        With a ``token_hash``, the token must have been issued for the reports' survey,
        and each (token, question) stores one report: a report the token already stored
        counts as stored before; any other report for a question the token answered, or
        a report id stored under another token, is refused. The bindings are stored in
        the same transaction as the reports; batches committed together see each other's.

        A survey with ``max_reports`` (its groups') never stores more: a batch whose new
        reports would take it past that is refused whole, decided in the batch's
        transaction so that concurrent batches (of any daemon) cannot overshoot; a batch
        with no new report for it (a resend) is acknowledged as usual.

        Raises:
            AlreadyExists: a report_id is stored in its survey with a different payload;
                the token answered the question with another report; the report id is
                stored under another token.
            FailedPrecondition: a survey is closed, or would pass its ``max_reports``.
            Unauthenticated: the token was not issued for the reports' survey.
        """

    def submit_async(
        self, submission: Submission, executor: Executor, *, alone: bool = False
    ) -> Future[SubmitOutcome]:
        """:meth:`submit`, with a future of its outcome (or error) returned at once.

        A caller on an event loop awaits the future instead of holding a thread. The
        default runs :meth:`submit` on ``executor``; a backend with a committer thread of
        its own queues the submission there instead. ``alone`` tells that no other batch
        is on its way: such a backend may then commit it in the calling thread, before
        returning (a resolved future).
        """
        return executor.submit(self.submit, submission)

    @abstractmethod
    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of new enrollment tokens of an open survey, durably, at once.

        Raises:
            FailedPrecondition: the survey is closed.
            NotFound: the survey does not exist.
        """

    @abstractmethod
    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """The running tally, or None for an unknown survey or question."""

    @abstractmethod
    def released(self, survey_id: str, question_id: str) -> Tally | None:
        """The tally last released for a stepped question (``Tally(0)`` before the first).

        Written in the transaction of the batch that reached the release point, so it is
        always a tally the question had at some commit. None for an unknown question.
        """

    @abstractmethod
    def log(self, survey_id: str) -> Generator[bytes, None, None]:
        """The survey's report log in commit order, streamed: one stored batch at a time.

        Each item is one committed batch's new reports for the survey, as the canonical
        serialized ``SubmitReportsRequest`` holding only its ``reports`` (never a token);
        every stored report is in exactly one item. Nothing is read until the first
        item is asked for, and then only a page of batches at a time, so memory does not
        grow with the log. The iterator holds the database for as long as it is open
        (PostgreSQL: a pooled connection), so close it, or read it to the end, promptly.

        It yields the batches committed before its first item was read, and none
        committed later: submissions go on while it is read (SQLite: the lock is taken
        per page; PostgreSQL: a read-only snapshot), and a batch committed meanwhile
        is for the next reader. (PostgreSQL orders batches by their log row's number,
        taken at insert: two daemons' batches committed at the same moment may come in
        either order.)

        Raises:
            Unavailable: while iterating, the database was lost (PostgreSQL).
        """

    @abstractmethod
    def close(self) -> None:
        """Release the backend's resources (closing twice is allowed)."""

    def disk_path(self) -> str | None:
        """A path on the filesystem that holds the database, or None if the daemon cannot see it.

        The daemon's free-space watermark watches it. The default, None, is for a
        database on another machine (PostgreSQL) or in memory.
        """
        return None

    def ping(self) -> None:
        """Raise :class:`~deniable.shared.errors.Unavailable` if the database is unreachable.

        The daemon's health service calls it now and then. An embedded database is always
        reachable: the default does nothing.
        """
        return
