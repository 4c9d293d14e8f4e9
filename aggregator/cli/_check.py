"""``deniable-aggregator check``: recompute every tally from the report log, read-only."""

from __future__ import annotations

import click

from deniable.aggregator.analysis.check import check
from deniable.aggregator.cli._common import DATABASE_VARIABLE, emit_json, fail
from deniable.aggregator.storage import StorageError, default_database_url, open_reader


@click.command("check")
@click.option(
    "--db",
    "database",
    envvar=DATABASE_VARIABLE,
    help="Database URL sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME  "
    "[default: sqlite:///$XDG_DATA_HOME/deniable/aggregator.db, as serve]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def check_command(database: str | None, as_json: bool) -> None:
    """Check that every stored tally equals the one recomputed from the report log.

    For each question the tally (n and sums) is recomputed from the report log with the
    same code that ingests reports, and compared with the stored running tally; the check
    also fails if a report_id occurs twice in a survey's log or a log row is damaged.
    Each mismatch is printed with its survey, question, stored and recomputed figures.

    It is read-only and safe while `serve` runs on the same database: it opens SQLite
    read-only, takes no lock, writes nothing, and reads the tallies and the whole log in
    one read transaction (one snapshot), so commits made meanwhile cannot cause false
    mismatches. On PostgreSQL the same holds with any number of daemons serving: one
    REPEATABLE READ READ ONLY transaction, the log streamed through a server-side cursor,
    and a question's tally is the sum of its per-batch rows. Messages show the URL
    without its password. Progress goes to stderr.

    \b
    Exit codes: 0 every tally matches, 1 a mismatch (tally, repeated report_id, or
    damaged log row), 2 invalid usage: missing or unreadable database, unsupported URL,
    or a schema this version does not know.
    """
    url = database or default_database_url()
    try:
        with open_reader(url) as reader, reader.snapshot():
            report = check(reader, progress=lambda message: click.echo(message, err=True))
    except (ValueError, StorageError) as error:
        fail(str(error), 2)
    if as_json:
        emit_json({"database": reader.url, **report.to_dict()})
    else:
        questions = sum(len(survey.questions) for survey in report.surveys)
        reports = sum(survey.reports for survey in report.surveys)
        for line in report.mismatches():
            click.echo(f"MISMATCH {line}")
        click.echo(
            f"{'OK' if report.ok else 'FAILED'}: {_count(len(report.surveys), 'survey')}, "
            f"{_count(questions, 'question')}, {_count(reports, 'report')} in the log of "
            f"{reader.name}"
        )
    if not report.ok:
        raise click.exceptions.Exit(1)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
