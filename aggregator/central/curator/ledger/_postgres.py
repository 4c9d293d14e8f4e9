"""The ledger in PostgreSQL (psycopg 3, pooled): a spend locks its dataset's row FOR UPDATE."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._model import LedgerUnavailableError
from deniable.aggregator.central.curator.ledger._schema import Db, migrate
from deniable.aggregator.central.curator.ledger._sql import SqlLedger
from deniable.aggregator.storage.postgres import one_line, redacted

__all__ = ["PostgresLedger"]

Connection = psycopg.Connection[TupleRow]
_MIGRATION_LOCK = 0x63757261  # pg_advisory_xact_lock key ("cura"): one process migrates


class _PostgresDb:
    """:class:`~._schema.Db` over a psycopg connection (``?`` becomes ``%s``)."""

    for_update = " FOR UPDATE"

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._connection.execute(sql.replace("?", "%s").encode(), params).fetchall()

    def run(self, sql: str, params: Sequence[object] = ()) -> int:
        return self._connection.execute(sql.replace("?", "%s").encode(), params).rowcount


class PostgresLedger(SqlLedger):
    """The ledger in a PostgreSQL database any number of custodian processes share.

    Every write is one READ COMMITTED transaction that first locks the dataset's row
    (``SELECT ... FOR UPDATE``): charges, token issues and revocations of one dataset
    take turns, and each reads what the one before committed. Reads are one REPEATABLE
    READ, READ ONLY snapshot. A lost database raises :class:`LedgerUnavailableError`.

    Args:
        url: a libpq URL; its password never appears in messages.
        connections: most pooled connections.
        pool_timeout: seconds a call waits for a connection.
        connect_timeout: seconds per connection attempt, unless the URL sets one.
    """

    def __init__(
        self,
        url: str,
        *,
        connections: int = 4,
        pool_timeout: float = 5.0,
        connect_timeout: int = 5,
    ) -> None:
        self.url = url
        self.name = redacted(url)
        try:
            options = conninfo_to_dict(url)
        except psycopg.Error as error:
            raise CuratorError(f"--db: cannot open {self.name!r}: {one_line(error)}") from None
        kwargs: dict[str, Any] = {}
        if "connect_timeout" not in options:
            kwargs["connect_timeout"] = connect_timeout
        try:
            with psycopg.connect(url, **kwargs) as connection, connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                migrate(_PostgresDb(connection), "postgresql", self.name)
        except psycopg.Error as error:
            raise CuratorError(f"--db: cannot open {self.name!r}: {one_line(error)}") from None
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            kwargs=kwargs,
            min_size=1,
            max_size=max(1, connections),
            timeout=pool_timeout,
            reconnect_timeout=max(10.0, 2 * pool_timeout),
            name="deniable-curator",
            open=True,
        )

    @contextmanager
    def _transaction(self, read_only: bool) -> Iterator[Db]:
        try:
            with self._pool.connection() as connection, connection.transaction():
                if read_only:
                    connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield _PostgresDb(connection)
        except psycopg.OperationalError as error:
            with contextlib.suppress(psycopg.Error):
                self._pool.check()  # drop dead idle connections; the pool reconnects
            raise LedgerUnavailableError(
                f"--db: the ledger database {self.name!r} is unavailable "
                f"({one_line(error)}); retry later (a spend cut off while committing "
                "may have been recorded: check the balance first)"
            ) from None

    def _write(self) -> AbstractContextManager[Db]:
        return self._transaction(read_only=False)

    def _read(self) -> AbstractContextManager[Db]:
        return self._transaction(read_only=True)

    def close(self) -> None:
        self._pool.close()
