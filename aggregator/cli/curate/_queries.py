"""``curate count|histogram|sum|mean``: one query, in-process or on a curator daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from deniable.aggregator.central import curator
from deniable.aggregator.cli.curate._errors import curator_errors
from deniable.aggregator.cli.curate._options import (
    analyst_options,
    emit,
    open_session,
    query_options_message,
)
from deniable.aggregator.cli.curate._release import answer_from_release
from deniable.aggregator.cli.curate._render import render_answer
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["count_command", "histogram_command", "mean_command", "sum_command"]


def _run(data: Path | None, options: dict[str, Any], request: pb.QueryRequest) -> None:
    as_json = options["as_json"]
    with curator_errors():
        if not options.get("server"):  # checked before the data or the ledger open
            curator.query_from_wire(request)
        session = open_session(data, options)
        try:
            document = session.query(request)
        finally:
            session.close()
    emit(document, render_answer(document), as_json)


def _max_rows(value: int | None) -> dict[str, int]:
    return {} if value is None else {"max_rows": value}


@click.command("count")
@analyst_options
@click.option("--max-rows", type=int, help="A public upper bound on the count (add-remove).")
def count_command(data: Path | None, max_rows: int | None, **options: Any) -> None:
    """Count the rows matching --where, plus discrete Laplace noise of scale K/ε.

    Each unit counts at most K of its matching rows, so the count's sensitivity is K
    (1 without --privacy-unit). The noisy count is an integer clamped to [0, upper]: the
    row count when it is public (replace-one), --max-rows, or none. The interval is the
    exact discrete Laplace quantile, clamped likewise.
    """
    if answer_from_release(data, options, "count", None, None):
        return
    request = pb.QueryRequest(
        options=query_options_message(options), count=pb.CountQuery(**_max_rows(max_rows))
    )
    _run(data, options, request)


@click.command("histogram")
@analyst_options
@click.option("--column", required=True, help="The column (a group key) whose values are counted.")
@click.option(
    "--values",
    help="The public list of values to count, comma-separated (e.g. HR,IT,Sales). Without "
    "it: DP key selection among the values present, which spends δ (--delta) too and "
    "shows only values whose noisy count passes a threshold.",
)
@click.option("--delta", "query_delta", type=float, help="δ of a key selection (no --values).")
@click.option("--max-rows", type=int, help="A public upper bound on each count (add-remove).")
def histogram_command(
    data: Path | None,
    column: str,
    values: str | None,
    query_delta: float | None,
    max_rows: int | None,
    **options: Any,
) -> None:
    """Count each value of --column among the rows matching --where, with noise.

    Over a public list of values (--values) every bin gets discrete Laplace noise of scale
    Δ/ε, Δ = K under add-remove and 2K under replace; the whole histogram costs ε once.
    Without --values the values themselves come from the data, so a rare one would give
    its holder away: each present value's noisy count is shown only above a threshold τ
    chosen so that a value held by one unit alone appears with probability at most δ.
    """
    if answer_from_release(data, options, "histogram", column, values):
        return
    message = pb.HistogramQuery(
        column=column,
        values=values.split(",") if values else [],
        delta=query_delta or 0.0,
        **_max_rows(max_rows),
    )
    _run(data, options, pb.QueryRequest(options=query_options_message(options), histogram=message))


def _numeric(kind: str) -> click.Command:
    @click.command(kind)
    @analyst_options
    @click.option("--column", required=True, help="The numeric column.")
    @click.option("--min", "low", type=float, help="Public lower clip (required on the data).")
    @click.option("--max", "high", type=float, help="Public upper clip (required on the data).")
    @click.option(
        "--resolution",
        help="The grid step the clipped values are rounded to (default: 1 for an int column "
        "with integer ends, else (max − min)/1024).",
    )
    def command(
        data: Path | None,
        column: str,
        low: float | None,
        high: float | None,
        resolution: str | None,
        **options: Any,
    ) -> None:
        if answer_from_release(data, options, kind, column, None):
            return
        if low is None or high is None:
            raise click.UsageError("--min and --max are required (the public clip range)")
        message = pb.NumericQuery(column=column, min=low, max=high, resolution=resolution or "")
        request = pb.QueryRequest(options=query_options_message(options))
        getattr(request, kind).CopyFrom(message)
        _run(data, options, request)

    return command


sum_command = _numeric("sum")
sum_command.help = """The sum of --column clipped to [--min, --max], plus noise of scale Δ/ε.

Values are clipped and rounded to the --resolution grid; each unit contributes at most
K rows, so its total lies in [K·min(lo, 0), K·max(hi, 0)] (the per-unit clamp) and Δ is
K·max(|lo|, |hi|) under add-remove, K·(max(hi, 0) − min(lo, 0)) under replace. A
missing cell contributes nothing.
"""
mean_command = _numeric("mean")
mean_command.help = """The mean of --column clipped to [--min, --max], with noise.

Under replace-one with each row a unit and no --where, the row count N is public and
the mean gets the whole ε with Δ = (max − min)/N (a missing cell counted as the clip's
midpoint). Otherwise it is a noisy sum over a noisy count, ε split in halves.
"""
