"""``curate sum`` and ``curate mean``: a numeric column clipped to [min, max], with noise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from deniable.aggregator.central import curator
from deniable.aggregator.cli.curate._options import (
    byte_source,
    charge,
    check_before_spending,
    check_mode,
    curator_errors,
    data_argument,
    emit,
    percent,
    privacy_line,
    query_options,
    read_table,
    release_privacy,
    spend_options,
)

__all__ = ["mean_command", "sum_command"]

F = TypeVar("F", bound=Callable[..., Any])


def numeric_options(function: F) -> F:
    """``--column``, ``--min``, ``--max``, ``--resolution``."""
    for option in reversed(
        [
            click.option("--column", required=True, help="The numeric column (int or float)."),
            click.option("--min", "lo", type=float, help="Public lower clip of each value."),
            click.option("--max", "hi", type=float, help="Public upper clip of each value."),
            click.option(
                "--resolution",
                help="Grid step: each clipped value is rounded to the nearest multiple, so the "
                "noise is exact discrete Laplace in steps (default 1 for an int column with "
                "integer --min/--max, else (max − min)/1024).",
            ),
        ]
    ):
        function = option(function)
    return function


def _prepare(
    data: Path | None,
    types: str | None,
    column: str,
    lo: float | None,
    hi: float | None,
    resolution: str | None,
    where: str | None,
) -> tuple[curator.Table, curator.SumSpec, curator.Condition | None]:
    if lo is None or hi is None:
        raise curator.CuratorError("--min and --max are required: the public clip of the values")
    table = read_table(data, types)
    condition = curator.parse_where(where, table.types) if where else None
    return table, curator.SumSpec.build(table, column, lo, hi, resolution), condition


def _query_data(
    name: str, noisy: Callable[..., Any], data: Path | None, types: str | None, column: str,
    lo: float | None, hi: float | None, resolution: str | None, where: str | None,
    confidence: float, neighbours: str, max_rows: int | None, ledger: Path | None,
    epsilon: float | None, budget: float | None, seed: int | None, *, halves: bool = False,
) -> tuple[curator.SumSpec, Any, dict[str, Any], dict[str, Any]]:  # fmt: skip
    """A sum or mean on the data: options checked, ε spent, then the noise drawn.

    ``halves``: ε is split in two (a mean's sum and count), each at least 2^-20. Returns
    the value specification, the noisy result and the JSON document (with the ledger's
    ``privacy`` record, also returned alone).
    """
    table, spec, condition = _prepare(data, types, column, lo, hi, resolution, where)
    check_before_spending(table, confidence, neighbours, max_rows)
    assert epsilon is not None  # check_mode requires it without --from-release
    if halves and epsilon / 2 < 2.0**-20:
        raise curator.CuratorError(f"--epsilon {epsilon!r}: a mean needs ε/2 >= 2^-20")
    query = f"{name} of {column}" + (f" where {where}" if where else "")
    privacy = charge(table, ledger, epsilon, budget, query, seed)
    result = noisy(
        table, spec, condition, epsilon, neighbours,
        confidence=confidence, source=byte_source(seed),
    )  # fmt: skip
    document = {
        "query": name, "column": column, "where": where, "neighbours": neighbours,
        **result.to_dict(), "privacy": privacy,
    }  # fmt: skip
    return spec, result, privacy, document


def _from_release(
    path: Path, column: str, where: str | None, confidence: float
) -> tuple[curator.Release, curator.ReleasedAnswer, curator.ReleasedAnswer, dict[str, Any]]:
    release = curator.read_release(path)
    release.numeric(column)
    condition = curator.parse_where(where, release.types) if where else None
    count = release.answer(condition, confidence)
    total = release.answer(condition, confidence, weight_column=column)
    return release, count, total, release_privacy(path, release)


@click.command("sum")
@data_argument(required=False)
@numeric_options
@query_options
@spend_options
def sum_command(
    data: Path | None,
    column: str,
    lo: float | None,
    hi: float | None,
    resolution: str | None,
    where: str | None,
    types: str | None,
    confidence: float,
    from_release: Path | None,
    as_json: bool,
    epsilon: float | None,
    budget: float | None,
    ledger: Path | None,
    neighbours: str,
    max_rows: int | None,
    seed: int | None,
) -> None:
    """Sum --column over the rows matching --where, each value clipped to [--min, --max].

    Sensitivity: max(|min|, |max|) under add-remove (one row's value joins or leaves);
    under replace, the width of [min(min, 0), max(max, 0)] (a row may go from contributing
    nothing to contributing max), which is max − min when min <= 0 <= max. Values are
    rounded to the --resolution grid and the noise is exact discrete Laplace in grid steps;
    the interval covers the sum of the clipped, rounded values (rounding moves each value by
    at most half a step). Empty cells contribute nothing.
    """
    with curator_errors():
        check_mode(
            data,
            from_release,
            {
                "epsilon": epsilon,
                "budget": budget,
                "max_rows": max_rows,
                "seed": seed,
                "types": types,
                "min": lo,
                "max": hi,
                "resolution": resolution,
            },
        )
        if from_release is not None:
            release, _, total, privacy = _from_release(from_release, column, where, confidence)
            document = {
                "query": "sum",
                "column": column,
                "where": where,
                "released": total.value,
                "epsilon": 0,
                "sensitivity": release.sensitivity,
                "noise_scale": float(release.scale),
                "interval": total.interval(total.low, total.high),
                "privacy": privacy,
            }
            low, high, value = total.low, total.high, total.value
        else:
            spec, result, privacy, document = _query_data(
                "sum", curator.noisy_sum, data, types, column, lo, hi, resolution, where,
                confidence, neighbours, max_rows, ledger, epsilon, budget, seed,
            )  # fmt: skip
            low, high, value = result.low, result.high, result.released
    lines = [
        f"Sum of {column}" + (f" where {where}:" if where else ":"),
        f"  {value:.10g}, {percent(confidence)} interval [{low:.10g}, {high:.10g}]",
    ]
    if from_release is None:
        lines.append(
            f"Noise: discrete Laplace of scale Δ/ε = {result.sensitivity:g}/{result.epsilon:g} "
            f"= {result.scale:.4g} on a grid of {float(spec.resolution):g}; values clipped to "
            f"[{float(spec.lo):g}, {float(spec.hi):g}]"
        )
    emit(document, [*lines, privacy_line(privacy)], as_json)


@click.command("mean")
@data_argument(required=False)
@numeric_options
@query_options
@spend_options
def mean_command(
    data: Path | None,
    column: str,
    lo: float | None,
    hi: float | None,
    resolution: str | None,
    where: str | None,
    types: str | None,
    confidence: float,
    from_release: Path | None,
    as_json: bool,
    epsilon: float | None,
    budget: float | None,
    ledger: Path | None,
    neighbours: str,
    max_rows: int | None,
    seed: int | None,
) -> None:
    """Mean of --column over the rows matching --where with a value, clipped to [--min, --max].

    Method: a noisy sum (ε/2, as `curate sum`) divided by a noisy count of the rows with a
    value (ε/2, sensitivity 1): ε in total by sequential composition. The ratio is clamped
    to [min, max] (the midpoint when the noisy count is 0). Interval: the sum and the count
    each lie in their exact interval at 1 − α/2 (union bound: both at once with at least
    the confidence); the mean then lies between the extreme ratios, within [min, max].
    """
    with curator_errors():
        check_mode(
            data,
            from_release,
            {
                "epsilon": epsilon,
                "budget": budget,
                "max_rows": max_rows,
                "seed": seed,
                "types": types,
                "min": lo,
                "max": hi,
                "resolution": resolution,
            },
        )
        if from_release is not None:
            release, count, total, privacy = _from_release(from_release, column, where, confidence)
            values = [float(v) for name, _, vs in release.columns if name == column for v in vs]  # type: ignore[arg-type]
            bottom, top = min(values), max(values)
            value = (bottom + top) / 2 if count.value < 1 else total.value / count.value
            value = min(top, max(bottom, value))
            low, high = curator.mean_interval(
                (total.low, total.high), (round(count.low), round(count.high)), bottom, top
            )
            document = {
                "query": "mean",
                "column": column,
                "where": where,
                "released": value,
                "epsilon": 0,
                "sensitivity": release.sensitivity,
                "noise_scale": float(release.scale),
                "method": "released Σ value·count / Σ count",
                "interval": total.interval(low, high),
                "privacy": privacy,
            }
        else:
            _, result, privacy, document = _query_data(
                "mean", curator.noisy_mean, data, types, column, lo, hi, resolution, where,
                confidence, neighbours, max_rows, ledger, epsilon, budget, seed, halves=True,
            )  # fmt: skip
            value, low, high = result.released, result.low, result.high
    lines = [
        f"Mean of {column}" + (f" where {where}:" if where else ":"),
        f"  {value:.10g}, {percent(confidence)} interval [{low:.10g}, {high:.10g}]",
        "Method: noisy sum / noisy count"
        + (" of the released cells" if from_release else ", ε split in halves"),
        privacy_line(privacy),
    ]
    emit(document, lines, as_json)
