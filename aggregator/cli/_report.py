"""``deniable-aggregator report``: one self-contained HTML page of a survey's estimates."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import click

from deniable.aggregator.analysis.publishing import QuestionResult, ReportData
from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    optional_token,
    remote_errors,
    server_option,
    tls_options,
    token_option,
)
from deniable.aggregator.cli._interval_options import interval_kind_options, interval_options
from deniable.aggregator.cli._out import check_out, whole_file, written_json_option
from deniable.aggregator.cli._question_estimates import question_estimates
from deniable.aggregator.cli.estimate._command import estimate_to_dict
from deniable.aggregator.questions import report_page
from deniable.client import AggregatorClient
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig


@click.command("report")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option(
    "--out",
    metavar="FILE",
    required=True,
    help="The HTML file to write (replaced whole, never half-written); - for stdout.",
)
@interval_options
@interval_kind_options
@written_json_option
def report_command(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    survey_id: str,
    out: str,
    confidence: float,
    method: str,
    simultaneous: bool,
    anytime: bool,
    as_json: bool,
) -> None:
    """Write SURVEY_ID's estimates as one self-contained HTML page.

    Per question: the estimate and its interval as a chart (yes/no and numeric:
    a point with its interval; multiple choice and multi-select: bars with error
    bars; a joint question's cross-tab and a multi-select question's
    co-occurrence as heat maps), n, the exact local ε, the central (ε, δ) of a
    survey released in steps, the release gate, what each interval promises,
    and the privacy text participants' devices showed. The page makes no network
    request and runs no script (styles and SVG charts are inline), prints on
    paper, and shows every survey string as text, never as markup. A stepped
    survey's live report count is shown only with the admin token
    (--admin-token-file); without it, the counts its releases are from.
    """
    if out == "-" and as_json:
        raise click.UsageError("--json describes a written file; with --out - the page is stdout")
    if out != "-":
        check_out(out)
    token = optional_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey = client.get_survey(survey_id)
        asked = question_estimates(
            client, survey, confidence, method, simultaneous=simultaneous, anytime=anytime
        )
    results = [
        QuestionResult(
            r.question,
            None if r.estimate is None else estimate_to_dict(r.estimate, r.question),
            r.reason,
        )
        for r in asked
    ]
    data = ReportData(
        survey=survey,
        results=results,
        confidence=confidence,
        method=method,
        simultaneous=simultaneous,
        anytime=anytime,
        generated=datetime.now(UTC),
        version=version("deniable"),
    )
    try:
        page = report_page(data).encode("utf-8")
    except ValueError as error:  # an estimate the charts cannot draw (not finite, reversed)
        fail(f"cannot draw the report of survey {survey.id!r}: {error}", 1)
    if out == "-":
        click.echo(page, nl=False)
        return
    try:
        with whole_file(out) as file:
            file.write(page)
    except OSError as error:
        fail(f"cannot write --out {out!r}: {error.strerror or error}", 2)
    estimated = sum(result.estimate is not None for result in results)
    if as_json:
        emit_json(
            {
                "survey_id": survey.id,
                "file": out,
                "bytes": len(page),
                "questions": len(results),
                "estimated": estimated,
                "waiting": [r.question.id for r in results if r.estimate is None],
            }
        )
        return
    click.echo(
        f"wrote the report of {visible(survey.title)} ({visible(survey.id)}) to {out}: "
        f"{len(results)} questions, {estimated} with estimates, {len(page):,} bytes"
    )
