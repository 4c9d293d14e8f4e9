"""``curate count`` and ``curate histogram``: noisy counts from the data or from a release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

__all__ = ["count_command", "histogram_command"]


def _clamped(value: float, upper: int | None) -> int:
    whole = max(0, round(value))
    return whole if upper is None else min(upper, whole)


def _noise_lines(result: curator.NoisyCount, neighbours: str) -> list[str]:
    upper = "N (public under replace)" if neighbours == "replace" else result.upper
    return [
        f"Noise: discrete Laplace of scale Δ/ε = {result.sensitivity}/{result.epsilon:g} = "
        f"{float(result.scale):.4g} (Δ = {result.sensitivity} under {neighbours} neighbours); "
        f"clamped to [0, {'∞)' if upper is None else f'{upper}]'}, which biases a true count of 0 "
        f"upwards by {result.worst_clamp_bias:.3g} at most",
    ]


def _count_document(
    query: str, where: str | None, result: curator.NoisyCount, neighbours: str
) -> dict[str, Any]:
    return {"query": query, "where": where, "neighbours": neighbours, **result.to_dict()}


@click.command("count")
@data_argument(required=False)
@query_options
@spend_options
def count_command(
    data: Path | None,
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
    """Count the rows of DATA.csv matching --where, plus discrete Laplace noise of scale 1/ε.

    The count's sensitivity is 1 under either neighbour relation. The noisy count is an
    integer, clamped to [0, N] (N the row count under replace, --max-rows under
    add-remove, else [0, ∞)); the interval is the exact discrete Laplace quantile,
    clamped likewise. With --from-release the count is summed from a release's cells:
    no privacy cost, and an interval over the cells summed (union bound).
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
            },
        )
        if from_release is not None:
            _count_from_release(from_release, where, confidence, as_json)
            return
        table = read_table(data, types)
        condition = curator.parse_where(where, table.types) if where else None
        check_before_spending(table, confidence, neighbours, max_rows)
        assert epsilon is not None
        query = f"count where {where}" if where else "count of all rows"
        privacy = charge(table, ledger, epsilon, budget, query, seed)
        result = curator.noisy_count(
            table,
            condition,
            epsilon,
            neighbours,
            max_rows=max_rows,
            confidence=confidence,
            source=byte_source(seed),
        )
    document = _count_document("count", where, result, neighbours) | {"privacy": privacy}
    lines = [
        f"Count of rows where {where}:" if where else "Count of rows:",
        f"  {result.released}, {percent(confidence)} interval [{result.low}, {result.high}]",
        *_noise_lines(result, neighbours),
        privacy_line(privacy),
    ]
    emit(document, lines, as_json)


def _count_from_release(path: Path, where: str | None, confidence: float, as_json: bool) -> None:
    release = curator.read_release(path)
    condition = curator.parse_where(where, release.types) if where else None
    answer = release.answer(condition, confidence)
    privacy = release_privacy(path, release)
    value = _clamped(answer.value, release.upper)
    low, high = _clamped(answer.low, release.upper), _clamped(answer.high, release.upper)
    document = {
        "query": "count",
        "where": where,
        "released": value,
        "epsilon": 0,
        "sensitivity": release.sensitivity,
        "noise_scale": float(release.scale),
        "interval": answer.interval(low, high),
        "privacy": privacy,
    }
    lines = [
        f"Count of rows where {where} (from the release):" if where else "Count of rows:",
        f"  {value}, {percent(confidence)} interval [{low}, {high}] "
        f"(sum of {answer.cells} released cells)",
        privacy_line(privacy),
    ]
    emit(document, lines, as_json)


@click.command("histogram")
@data_argument(required=False)
@click.option("--column", required=True, help="The column whose values are counted.")
@click.option(
    "--values",
    help="The public list of values to count, comma-separated (e.g. HR,IT,Sales): a list "
    "taken from the data would reveal a rare value. Rows with an unlisted value are in no "
    "bin. From a release: its list, unless given.",
)
@query_options
@spend_options
def histogram_command(
    data: Path | None,
    column: str,
    values: str | None,
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
    """Count each listed value of --column among the rows matching --where, with noise.

    The histogram's L1 sensitivity is 1 under add-remove neighbours (one row joins or
    leaves one bin) and 2 under replace (one bin loses it, another gains it); every bin
    gets discrete Laplace noise of scale Δ/ε and the whole histogram costs ε once
    (parallel bins, not sequential composition). Each bin's interval is at the
    confidence on its own.
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
            },
        )
        if from_release is not None:
            _histogram_from_release(from_release, column, values, where, confidence, as_json)
            return
        table = read_table(data, types)
        condition = curator.parse_where(where, table.types) if where else None
        listed = curator.parse_values(
            table, column, (values or "").split(",") if values else [], "--values"
        )
        check_before_spending(table, confidence, neighbours, max_rows)
        assert epsilon is not None
        query = f"histogram of {column}" + (f" where {where}" if where else "")
        privacy = charge(table, ledger, epsilon, budget, query, seed)
        bins = curator.noisy_histogram(
            table,
            column,
            listed,
            condition,
            epsilon,
            neighbours,
            max_rows=max_rows,
            confidence=confidence,
            source=byte_source(seed),
        )
    first = bins[0][1]
    document = {
        "query": "histogram",
        "column": column,
        "where": where,
        "neighbours": neighbours,
        "epsilon": first.epsilon,
        "sensitivity": first.sensitivity,
        "noise_scale": float(first.scale),
        "bins": [{"value": value, **result.to_dict()} for value, result in bins],
        "privacy": privacy,
    }
    lines = [f"Histogram of {column}" + (f" where {where}:" if where else ":")]
    lines += [
        f"  {value}: {result.released}, {percent(confidence)} interval "
        f"[{result.low}, {result.high}]"
        for value, result in bins
    ]
    lines += [*_noise_lines(first, neighbours), privacy_line(privacy)]
    emit(document, lines, as_json)


def _histogram_from_release(
    path: Path,
    column: str,
    values: str | None,
    where: str | None,
    confidence: float,
    as_json: bool,
) -> None:
    release = curator.read_release(path)
    condition = curator.parse_where(where, release.types) if where else None
    domain = {name: listed for name, _, listed in release.columns}
    if column not in domain:
        raise curator.CuratorError(
            f"--column: {column!r} is not in the release (its columns: {', '.join(domain)})"
        )
    chosen = list(domain[column])
    if values:
        wanted = values.split(",")
        missing = [text for text in wanted if text not in [str(v) for v in chosen]]
        if missing:
            raise curator.CuratorError(
                f"--values: {missing[0]!r} is not a released value of {column!r}"
            )
        chosen = [v for v in chosen if str(v) in wanted]
    bins: list[dict[str, Any]] = []
    for value in chosen:
        answer = release.answer(curator.value_condition(column, value, condition), confidence)
        low, high = _clamped(answer.low, release.upper), _clamped(answer.high, release.upper)
        bins.append(
            {
                "value": value,
                "released": _clamped(answer.value, release.upper),
                "interval": answer.interval(low, high),
            }
        )
    privacy = release_privacy(path, release)
    document = {
        "query": "histogram",
        "column": column,
        "where": where,
        "epsilon": 0,
        "sensitivity": release.sensitivity,
        "noise_scale": float(release.scale),
        "bins": bins,
        "privacy": privacy,
    }
    lines = [f"Histogram of {column} (from the release)" + (f" where {where}:" if where else ":")]
    lines += [
        f"  {b['value']}: {b['released']}, {percent(confidence)} interval "
        f"[{b['interval']['low']}, {b['interval']['high']}]"
        for b in bins
    ]
    emit(document, [*lines, privacy_line(privacy)], as_json)
