"""``deniable-aggregator export``: estimates or stored reports as CSV, JSON or Parquet."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    optional_token,
    read_token,
    remote_errors,
    server_option,
    tls_options,
    token_option,
)
from deniable.aggregator.cli._interval_options import interval_kind_options, interval_options
from deniable.aggregator.cli._out import check_out, whole_file, written_json_option
from deniable.aggregator.cli._progress import progress, shows_progress
from deniable.aggregator.cli._question_estimates import question_estimates
from deniable.aggregator.cli.export._formats import FORMATS, PARQUET_EXTRA, write_rows
from deniable.aggregator.cli.export._rows import (
    ESTIMATE_COLUMNS,
    REPORT_COLUMNS,
    Column,
    estimate_rows,
    report_rows,
)
from deniable.client import AggregatorClient
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["export_command"]

Rows = Callable[[AggregatorClient, pb.Survey], Iterator[list[Any]]]


def _estimates(confidence: float, method: str, *, simultaneous: bool, anytime: bool) -> Rows:
    def rows(client: AggregatorClient, survey: pb.Survey) -> Iterator[list[Any]]:
        asked = question_estimates(
            client, survey, confidence, method, simultaneous=simultaneous, anytime=anytime
        )
        return estimate_rows(survey.id, asked)

    return rows


def _reports(as_json: bool) -> Rows:
    def rows(client: AggregatorClient, survey: pb.Survey) -> Iterator[list[Any]]:
        enabled = shows_progress(as_json)
        with progress(survey.reports, "exporting", "reports", enabled=enabled) as advance:
            yield from report_rows(survey, client.export_reports(survey.id), advance)

    return rows


@click.command("export")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option(
    "--what",
    type=click.Choice(["estimates", "reports"]),
    default="estimates",
    show_default=True,
    help="estimates: one row per estimated quantity; reports: every stored report (admin).",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(FORMATS),
    default="csv",
    show_default=True,
    help="json: one array of objects; jsonl: one object per line; parquet needs pyarrow.",
)
@click.option(
    "--out",
    metavar="FILE",
    default="-",
    show_default=True,
    help="The file to write (it appears only once complete); - for stdout.",
)
@interval_options
@interval_kind_options
@written_json_option
def export_command(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    survey_id: str,
    what: str,
    file_format: str,
    out: str,
    confidence: float,
    method: str,
    simultaneous: bool,
    anytime: bool,
    as_json: bool,
) -> None:
    """Export SURVEY_ID's estimates or stored reports as CSV, JSON or Parquet.

    Estimates (the default): one row per estimated quantity (a yes-share, a
    mean, each option, cell, marginal, item or pair, a covariance or
    correlation) with its estimate, interval, method, what the interval
    covers, n and the exact local ε (and the central (ε, δ) of a stepped
    survey); a question without an estimate yet is one row saying why.

    Reports (--what reports, needs the admin token): every stored report once,
    in commit order, as stored: report id, question, mechanism and the
    randomized value. They are already private (each was randomized on the
    participant's device), so the file is as safe to share as the estimates.
    The daemon streams them and this command writes them as they come, so
    memory stays flat however many there are; a progress bar with rate and
    ETA is drawn on stderr when it is a terminal (never with --json).

    Every format loads with pandas (read_csv, read_json, read_json(lines=True),
    read_parquet). A file given with --out appears only once complete.
    """
    if out == "-" and as_json:
        raise click.UsageError("--json describes a written file; with --out - the data is stdout")
    if file_format == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise click.UsageError(f"--format parquet needs pyarrow: {PARQUET_EXTRA}") from None
    if out != "-":
        check_out(out)
    columns: tuple[Column, ...] = ESTIMATE_COLUMNS
    rows: Rows = _estimates(confidence, method, simultaneous=simultaneous, anytime=anytime)
    token = optional_token(admin_token_file)  # estimates: a stepped survey's live counts
    if what == "reports":
        columns, rows, token = REPORT_COLUMNS, _reports(as_json), read_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey = client.get_survey(survey_id)
        try:
            with whole_file(out) as stream:
                count = write_rows(file_format, columns, rows(client, survey), stream)
        except BrokenPipeError:  # the reader of stdout stopped (| head): nothing more to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except OSError as error:
            fail(f"cannot write --out {out!r}: {error.strerror or error}", 2)
    if out == "-":
        return
    size = Path(out).stat().st_size
    if as_json:
        emit_json(
            {
                "survey_id": survey.id,
                "what": what,
                "format": file_format,
                "file": out,
                "rows": count,
                "bytes": size,
            }
        )
        return
    click.echo(
        f"wrote {count:,} rows of {what} of {visible(survey.title)} ({visible(survey.id)}) "
        f"to {out} ({file_format}, {size:,} bytes)",
        err=False,
    )
