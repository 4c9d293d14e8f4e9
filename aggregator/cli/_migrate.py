"""``deniable-aggregator migrate``: upgrade a database's schema, or copy one database to another."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from deniable.aggregator.cli._common import DATABASE_VARIABLE, emit_json, fail
from deniable.aggregator.cli._progress import progress, shows_progress
from deniable.aggregator.storage import (
    CopyRefusedError,
    StorageError,
    copy,
    default_database_url,
    open_reader,
    source_reports,
    upgrade,
    writing,
)
from deniable.shared.errors import AggregatorError


@click.command("migrate")
@click.option(
    "--db",
    "database",
    envvar=DATABASE_VARIABLE,
    help="Upgrade this database's schema: sqlite:///PATH or "
    "postgresql://USER@HOST:PORT/DBNAME  [default: as serve]",
)
@click.option("--from", "source", metavar="URL", help="Copy from this database (with --to).")
@click.option("--to", "target", metavar="URL", help="Copy into this database (with --from).")
@click.option(
    "--into-non-empty",
    is_flag=True,
    help="Copy into a target that already holds surveys (none may have a source survey's id).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_context
def migrate_command(
    ctx: click.Context,
    database: str | None,
    source: str | None,
    target: str | None,
    into_non_empty: bool,
    as_json: bool,
) -> None:
    """Upgrade a database's schema (--db), or copy one database into another (--from, --to).

    With --db (or none of these: the database serve uses), bring the schema to this
    version in one transaction and print the versions before and after; running it again
    changes nothing. serve does the same when it starts; this does it ahead of time.

    With --from URL --to URL, copy every survey (its id, creation order, state and
    spec), the report log with its report ids, the tallies, the releases of stepped
    questions and the enrollment state (token hashes, tokens issued, and which report
    each token gave for each question) from one database to the other: SQLite to
    PostgreSQL or back, or between two databases of one kind. Each log row is replayed
    into the target as the batch it was, so the target rebuilds ids, tallies and
    releases with its own ingest code; the copy is refused if they differ from the
    source's stored ones. The source is read in one snapshot, so it may be copied while
    its daemon serves, but reports stored after the snapshot are not copied (stop the
    daemons, or copy again into an empty target, to have them). The target is written
    all or nothing: one transaction on PostgreSQL; for SQLite a staging file
    (PATH.migrating) that replaces PATH once complete, while PATH.lock keeps a daemon
    away. A target that holds surveys is refused unless --into-non-empty is given, and
    even then a survey id held by both is refused. Run check on the target afterwards.
    When stderr is a terminal, a progress bar there shows the reports copied with their
    rate and ETA; off a terminal or with --json, stderr holds only errors. URLs are shown
    without their password.

    \b
    Exit codes: 0 done, 1 copy refused (the target holds surveys, a survey exists in
    both, or the source's tallies do not replay), 2 invalid usage or a database error: a
    missing or unreadable database, an unsupported URL, a schema this version does not
    know, or a failure while writing the target (nothing of the copy is kept).
    """
    if source is not None or target is not None:
        if source is None or target is None:
            raise click.UsageError("--from and --to go together: give both")
        if ctx.get_parameter_source("database") == ParameterSource.COMMANDLINE:
            raise click.UsageError("--db upgrades one database; --from and --to copy: not both")
        if source == target:
            raise click.UsageError(f"--from and --to name the same database {source!r}")
        _copy(source, target, into_non_empty, as_json)
    else:
        if into_non_empty:
            raise click.UsageError("--into-non-empty goes with --from and --to")
        _upgrade(database or default_database_url(), as_json)


def _copy(source: str, target: str, into_non_empty: bool, as_json: bool) -> None:
    try:
        with (
            open_reader(source) as reader,
            reader.snapshot(),
            writing(target) as (storage, target_name),
        ):
            total = source_reports(reader)
            shown = shows_progress(as_json) and total > 0
            with progress(total, "copying", "reports", enabled=shown) as advance:
                summary = copy(
                    reader,
                    storage,
                    target_name=target_name,
                    allow_non_empty=into_non_empty,
                    progress=advance,
                )
    except (ValueError, StorageError) as error:
        fail(str(error), 2)
    except (CopyRefusedError, AggregatorError) as error:
        fail(str(error), 1)
    if as_json:
        emit_json(
            {
                "source": reader.url,
                "target": target_name,
                "surveys": summary.surveys,
                "log_rows": summary.log_rows,
                "reports": summary.reports,
                "tokens": summary.tokens,
                "bindings": summary.bindings,
            }
        )
    else:
        click.echo(
            f"copied {summary.surveys:,} surveys, {summary.reports:,} reports in "
            f"{summary.log_rows:,} log rows, {summary.tokens:,} tokens and "
            f"{summary.bindings:,} token answers from {reader.name} to {target_name}"
        )


def _upgrade(url: str, as_json: bool) -> None:
    try:
        name, before, after = upgrade(url)
    except (ValueError, StorageError) as error:
        fail(str(error), 2)
    document: dict[str, Any] = {"database": name, "from_version": before, "to_version": after}
    if as_json:
        emit_json(document)
    elif before == after:
        click.echo(f"{name}: schema version {after}, already current")
    else:
        click.echo(f"{name}: schema version {before} -> {after}")
