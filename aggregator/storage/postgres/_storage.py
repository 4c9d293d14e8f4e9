"""PostgreSQL storage: ids made unique by the database, per-batch tally rows summed on read."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from contextlib import AbstractContextManager

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

from deniable.aggregator.storage._base import (
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
)
from deniable.aggregator.storage.codec import expand
from deniable.aggregator.storage.postgres._batch import Written, fast
from deniable.aggregator.storage.postgres._careful import careful
from deniable.aggregator.storage.postgres._errors import (
    Connection,
    Transactions,
    one_line,
    redacted,
)
from deniable.aggregator.storage.postgres._schema import migrate
from deniable.aggregator.storage.postgres._tally import (
    COMPACT_EVERY,
    COMPACT_ROWS,
    compact,
    released_row,
    sum_rows,
)
from deniable.aggregator.storage.postgres._tokens import Binding, insert_bindings
from deniable.shared.errors import FailedPrecondition, NotFound
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["LOG_PAGE", "PostgresStorage"]

LOG_PAGE = 16  # log rows (stored batches) fetched at a time by Storage.log


class PostgresStorage(Storage):
    """A backend that any number of daemons can share.

    Every batch is one transaction. Its report ids go in under the primary key of
    ``report_ids``, which decides which are new, so a report is counted once whichever
    daemon receives it and however often it is resent (a concurrent insert of the same
    id waits for the first to commit). A batch of new reports is one statement, one round
    trip (:mod:`._batch`). Each batch adds one tally row per question it
    touches; reads sum them, and old rows are folded into the question's first row now
    and then (:mod:`._tally`). An enrollment token binds each (token, question)
    to one report in the batch's transaction (:mod:`._tokens`).

    A lost database (refused or dropped connections, a server shutting down, no pooled
    connection within ``pool_timeout`` seconds) raises
    :class:`~._errors.DatabaseUnavailable`, UNAVAILABLE: nothing of the call is
    committed, and once the server is back the pool reconnects by itself.

    Args:
        url: a libpq URL; its password never appears in messages.
        connections: most pooled connections (match the server's worker threads).
        pool_timeout: seconds a call waits for a connection before UNAVAILABLE.
        connect_timeout: seconds per connection attempt, unless the URL sets one.
    """

    def __init__(
        self,
        url: str,
        *,
        connections: int = 16,
        pool_timeout: float = 5.0,
        connect_timeout: int = 5,
    ) -> None:
        self.url = url
        try:
            options = conninfo_to_dict(url)
        except psycopg.Error as error:
            raise StorageError(
                f"cannot open PostgreSQL database {redacted(url)!r}: {one_line(error)}"
            ) from None
        kwargs: dict[str, object] = {}
        if "connect_timeout" not in options:
            kwargs["connect_timeout"] = connect_timeout
        try:
            with psycopg.connect(url, **kwargs) as db:  # type: ignore[arg-type]
                migrate(db)
        except psycopg.Error as error:
            raise StorageError(
                f"cannot open PostgreSQL database {redacted(url)!r}: {one_line(error)}"
            ) from None
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            kwargs=kwargs,
            min_size=1,
            max_size=max(1, connections),
            timeout=pool_timeout,
            reconnect_timeout=max(10.0, 2 * pool_timeout),
            name="deniable",
            open=True,
        )
        self._db = Transactions(self._pool, url)

    def _survey(self, db: Connection, row: TupleRow) -> pb.Survey:
        survey_id, spec, state = row
        survey = pb.Survey.FromString(bytes(spec))
        survey.state = state
        counts = db.execute(
            "SELECT COALESCE(SUM(n), 0), "
            "(SELECT issued FROM token_counts WHERE survey_id = %s) "
            "FROM tallies WHERE survey_id = %s",
            (survey_id, survey_id),
        ).fetchone()
        assert counts is not None
        survey.reports = int(counts[0])
        survey.tokens_issued = int(counts[1] or 0)
        return survey

    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new open survey and a zero tally row (batch 0) per question."""

        def work(db: Connection) -> None:
            db.execute(
                "INSERT INTO surveys (id, state, spec) VALUES (%s, %s, %s)",
                (survey.id, pb.SURVEY_STATE_OPEN, survey.SerializeToString()),
            )
            db.execute(
                "INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
                "SELECT %s, unnest(%s::text[]), 0, 0, '{}'",
                (survey.id, [q.id for q in survey.questions]),
            )

        self._db.run(work, again=False)

    def get_survey(self, survey_id: str) -> pb.Survey | None:
        """The survey with its state, report count and tokens issued, or None."""

        def work(db: Connection) -> pb.Survey | None:
            row = db.execute(
                "SELECT id, spec, state FROM surveys WHERE id = %s", (survey_id,)
            ).fetchone()
            return None if row is None else self._survey(db, row)

        return self._db.run(work)

    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order, open ones only unless ``include_closed``."""

        def work(db: Connection) -> list[pb.Survey]:
            rows = db.execute(
                "SELECT id, spec, state FROM surveys WHERE state = %s OR %s ORDER BY seq",
                (pb.SURVEY_STATE_OPEN, include_closed),
            ).fetchall()
            return [self._survey(db, row) for row in rows]

        return self._db.run(work)

    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (closing twice is a no-op)."""

        def work(db: Connection) -> None:
            db.execute(
                "UPDATE surveys SET state = %s WHERE id = %s",
                (pb.SURVEY_STATE_CLOSED, survey_id),
            )

        self._db.run(work)
        return self.get_survey(survey_id)

    def issue_tokens(self, survey_id: str, hashes: Sequence[bytes]) -> None:
        """Store the hashes of an open survey's new tokens, and count them, in one transaction."""

        def work(db: Connection) -> None:
            row = db.execute(
                "SELECT state FROM surveys WHERE id = %s FOR SHARE", (survey_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"survey_id: unknown survey {survey_id!r}")
            if row[0] != pb.SURVEY_STATE_OPEN:
                raise FailedPrecondition(f"survey_id: survey {survey_id!r} is closed")
            db.execute(
                "INSERT INTO tokens (hash, survey_id) SELECT unnest(%s::bytea[]), %s",
                (list(hashes), survey_id),
            )
            db.execute(
                "INSERT INTO token_counts (survey_id, issued) VALUES (%s, %s) "
                "ON CONFLICT (survey_id) DO UPDATE "
                "SET issued = token_counts.issued + excluded.issued",
                (survey_id, len(hashes)),
            )

        self._db.run(work, again=False)

    def submit(self, submission: Submission) -> SubmitOutcome:
        """Store the new reports, their log rows and tally rows in one transaction.

        A batch without a token, a stepped question or a capped survey, all of it new,
        is one statement; otherwise (or when that statement finds a stored id) the careful
        path runs.
        """
        written: Written | None = None
        if submission.token_hash is None and all(
            g.releases is None and not g.max_reports for g in submission.groups
        ):
            written = self._db.run(lambda db: fast(db, submission), autocommit=True)
        if written is None:
            written = self._db.run(lambda db: careful(db, submission))
        for survey_id, question_id, batch in written.tally_rows:
            if batch % COMPACT_EVERY == 0:
                self.compact(survey_id, question_id)
        return SubmitOutcome(written.stored, len(submission.report_ids) - written.stored)

    def compact(self, survey_id: str, question_id: str) -> int:
        """Fold the question's tally rows into one; how many rows were folded (0: busy)."""
        return self._db.run(lambda db: compact(db, (survey_id, question_id)))

    def _known(self, db: Connection, key: tuple[str, str]) -> bool:
        return (
            db.execute(
                "SELECT 1 FROM tallies WHERE survey_id = %s AND question_id = %s AND batch = 0",
                key,
            ).fetchone()
            is not None
        )

    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """The sum of the question's tally rows, or None if unknown (folds many rows)."""
        key = (survey_id, question_id)

        def work(db: Connection) -> tuple[Tally, int] | None:
            return sum_rows(db, key) if self._known(db, key) else None

        found = self._db.run(work)
        if found is None:
            return None
        total, rows = found
        if rows > COMPACT_ROWS:
            self.compact(survey_id, question_id)
        return total

    def released(self, survey_id: str, question_id: str) -> Tally | None:
        """The tally last released (``Tally(0)`` before the first), or None if unknown."""
        key = (survey_id, question_id)

        def work(db: Connection) -> Tally | None:
            return released_row(db, key) if self._known(db, key) else None

        return self._db.run(work)

    def log(self, survey_id: str) -> Generator[bytes, None, None]:
        """The survey's log rows in commit order, from one read-only snapshot.

        A server-side cursor on a pooled connection, held until the iterator ends or is
        closed, fetches :data:`LOG_PAGE` rows at a time (see :meth:`Transactions.stream`).
        """

        def work(db: Connection) -> Iterator[bytes]:
            with db.cursor(name="deniable_log") as cursor:
                cursor.execute(
                    "SELECT reports FROM log WHERE survey_id = %s ORDER BY seq", (survey_id,)
                )
                while page := cursor.fetchmany(LOG_PAGE):
                    for (reports,) in page:
                        yield expand(bytes(reports))

        return self._db.stream(work)

    def ping(self) -> None:
        """One round trip to the server: UNAVAILABLE if it cannot be reached."""
        self._db.run(lambda db: db.execute("SELECT 1"), autocommit=True)

    def close(self) -> None:
        """Close the connection pool (closing twice is allowed)."""
        self._pool.close()

    # --- used by `deniable-aggregator migrate` (see storage._copy); kept last for easy merges ---

    def restore_bindings(self, bindings: Sequence[Binding]) -> None:
        """Store enrollment bindings copied from another database, in one transaction."""
        self._db.run(lambda db: insert_bindings(db, bindings), again=False)

    def single_transaction(self) -> AbstractContextManager[None]:
        """Every call made inside runs in one transaction, committed when the block ends."""
        return self._db.pinned()
