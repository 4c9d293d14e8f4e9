"""``deniable-aggregator synthesize``: a synthetic CSV table sampled from a survey's estimates."""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import click
import numpy as np

from deniable.aggregator.analysis.publishing import (
    INDEPENDENCE,
    MAX_ROWS,
    PRIVACY,
)
from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    remote_errors,
    server_option,
    tls_options,
)
from deniable.aggregator.questions import plan_synthesis
from deniable.client import AggregatorClient
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb


def _check_out(out: Path) -> None:
    """Refuse an --out that cannot be written (exit code 2) before asking the daemon."""
    if out.exists():
        raise click.UsageError(f"--out: {str(out)!r} exists; it is not overwritten")
    parent = out.parent
    if not parent.is_dir():
        raise click.UsageError(f"--out: directory {str(parent)!r} of {str(out)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise click.UsageError(f"--out: {str(out)!r} is not writable")


@click.command("synthesize")
@server_option
@tls_options
@click.argument("survey_id")
@click.option(
    "--rows",
    type=click.IntRange(1, MAX_ROWS),
    required=True,
    help=f"Rows of the synthetic table, 1..{MAX_ROWS:,}.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The CSV file to write, whole or not at all; an existing file is not overwritten.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the sampler: the same seed, survey estimates and --rows give the same "
    "file (default: fresh entropy from the operating system).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def synthesize_command(
    server: str,
    tls: TlsConfig | None,
    survey_id: str,
    rows: int,
    out: Path,
    seed: int | None,
    as_json: bool,
) -> None:
    """Write a synthetic CSV table sampled from SURVEY_ID's estimates (no privacy cost).

    Post-processing of the released estimates: it costs no privacy beyond the
    survey's ε, and no row is any participant's answer. One column per yes/no,
    multiple-choice or numeric question (yes/no with the estimated share;
    options with their estimated shares; a number from the maximum-entropy
    distribution on its range with the estimated mean, as only the mean is
    estimated), one per part of a joint question (rows drawn from its cross-tab,
    so the parts' relationship is kept; a numeric part uniform within its bin)
    and one 0/1 column per item of a multi-select question (sets drawn to keep
    the item shares and pairwise co-occurrences, up to 12 items). Columns of
    different questions are independent: only what was asked together keeps
    its relationship.
    """
    _check_out(out)
    estimates: dict[str, pb.Estimate] = {}
    with remote_errors(server), AggregatorClient(server, tls=tls) as client:
        survey = client.get_survey(survey_id)
        for question in survey.questions:
            estimates[question.id] = client.get_estimate(survey_id, question.id)
    try:
        plan = plan_synthesis(survey, estimates)
    except ValueError as error:
        fail(str(error), 1)
    rng = np.random.default_rng(seed)
    columns = plan.columns
    try:
        _write(out, [c.name for c in columns], plan.rows(rng, rows))
    except OSError as error:
        fail(f"cannot write --out {str(out)!r}: {error.strerror or error}", 2)
    if as_json:
        emit_json(
            {
                "survey_id": survey.id,
                "file": str(out),
                "rows": rows,
                "seed": seed,
                "columns": [
                    {"name": c.name, "question_id": c.question_id, "method": c.method}
                    for c in columns
                ],
                "notes": list(plan.notes),
                "privacy": PRIVACY,
                "independence": INDEPENDENCE,
            }
        )
        return
    click.echo(
        f"wrote {rows:,} synthetic rows x {len(columns)} columns of {visible(survey.title)} "
        f"({visible(survey.id)}) to {out}"
    )
    for column in columns:
        click.echo(f"  {visible(column.name)}: {visible(column.method)}")
    for note in plan.notes:
        click.echo(f"note: {visible(note)}")
    click.echo(f"privacy: {PRIVACY}")
    click.echo(f"independence: {INDEPENDENCE}")


def _write(out: Path, header: list[str], rows: Iterable[list[str]]) -> None:
    """Write the CSV to a temporary file beside ``out``, then link it there whole.

    The link fails if ``out`` appeared meanwhile: an existing file is never overwritten.
    """
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(handle, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(header)
            writer.writerows(rows)
        os.link(temporary, out)
    finally:
        Path(temporary).unlink(missing_ok=True)
