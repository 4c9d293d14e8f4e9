"""``deniable-aggregator simulate --type multi_select``: sets you choose, coverage measured."""

from __future__ import annotations

import math
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import click

from deniable.aggregator.analysis._distributions import parse_options
from deniable.aggregator.analysis._simulate_grpc import aggregator_connection
from deniable.aggregator.analysis._simulate_multi_select import (
    MultiSelectGrpcSubmitter,
    MultiSelectSimulation,
    SetDistribution,
    simulate_multi_select,
)
from deniable.aggregator.cli._common import (
    emit_json,
    read_token,
    remote_errors,
    transport_line,
    user_errors,
)
from deniable.aggregator.cli._kinds import mechanism_summary, reject_options
from deniable.aggregator.cli._progress import simulation_progress
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.mechanisms import ItemRandomizedResponse
from deniable.shared.questions import MULTI_SELECT, check_question
from deniable.shared.stats import check_method
from deniable.shared.transport import TlsConfig

__all__ = ["simulate_multi_select_command"]


def simulate_multi_select_command(
    *,
    participants: int,
    options: str | None,
    mechanism: str | None,
    distribution: str | None,
    epsilon: float | None,
    repeats: int,
    confidence: float,
    method: str,
    seed: int | None,
    transport: str,
    server: str | None,
    admin_token_file: Path | None,
    batch_size: int,
    as_json: bool,
    tls: TlsConfig | None = None,
) -> None:
    """Simulate a multi-select question, over gRPC or in process, and print it."""
    reject_options("multi_select", ["share", "lo", "hi", "alpha"])
    if options is None:
        raise click.UsageError("--type multi_select needs --options (the items' names, or K)")
    if epsilon is None:
        raise click.UsageError("--type multi_select needs --epsilon (the question's total)")
    if distribution is None:
        raise click.UsageError(
            "--type multi_select needs --distribution: sets and their probabilities, "
            "e.g. a+b:0.3,a:0.2,none:0.5"
        )
    if transport == "inprocess" and server is not None:
        raise click.UsageError("--server needs --transport grpc")
    token = read_token(admin_token_file) if server is not None else None
    with user_errors():
        names = parse_options(options)
        as_count("participants", participants, minimum=1)
        as_count("repeats", repeats, minimum=1)
        check_open_unit("confidence", confidence)
        check_method(method)
        spec = cast(
            ItemRandomizedResponse,  # the type's only mechanism
            MULTI_SELECT.build(mechanism or "auto", len(names), epsilon=epsilon),
        )
        check_question(MULTI_SELECT.question_for(spec, names), "--options")
        sets = SetDistribution.parse(distribution, names)
    with ExitStack() as stack:
        stack.enter_context(user_errors())
        stack.enter_context(remote_errors(server or "the embedded aggregator"))
        sent, repeated = simulation_progress(
            stack, grpc=transport == "grpc", participants=participants, repeats=repeats,
            as_json=as_json,
        )  # fmt: skip
        submit: MultiSelectGrpcSubmitter | None = None
        if transport == "grpc":
            client, address = stack.enter_context(
                aggregator_connection(server, token, batch_size, tls)
            )
            submit = MultiSelectGrpcSubmitter(
                client, spec, address, confidence, method, batch_size,
                embedded=server is None, options=names, progress=sent,
            )  # fmt: skip
        result = simulate_multi_select(
            participants, sets, spec, items=names, repeats=repeats, confidence=confidence,
            method=method, seed=seed, progress=repeated, submit=submit,
        )  # fmt: skip
    grpc_info = submit.summary() if submit is not None else None
    if as_json:
        emit_json({"type": "multi_select", **result.to_dict(), "grpc": grpc_info})
        return
    _print(result, grpc_info)


def _coverage(value: float | None, repeats: int) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}±{math.sqrt(value * (1 - value) / repeats):.3f}"


def _print(result: MultiSelectSimulation, grpc_info: dict[str, Any] | None) -> None:
    first, names = result.first, result.items
    k = len(names)
    click.echo(
        f"Simulated {result.participants:,} participants choosing sets of {k} items "
        f"(randomness: {result.randomness})"
    )
    click.echo(f"Mechanism: {mechanism_summary(result.mechanism)}")
    click.echo(
        f"Privacy: epsilon = {result.mechanism['epsilon']:.4f} per answer (exact), "
        f"{result.mechanism['epsilon_per_item']:.4f} per item"
    )
    click.echo(
        "True sets: " + ", ".join(f"{name} {p:.4g}" for name, p in result.distribution.items())
    )
    width = max(6, *(len(name) for name in names))
    click.echo(f"  {'item':<{width}} {'true':>7} {'estimate':>9}  {result.confidence:.0%} CI")
    for i, name in enumerate(names):
        click.echo(
            f"  {name:<{width}} {result.true_pairs[i][i]:>7.4f} {first['estimate'][i]:>9.4f}"
            f"  [{first['ci_low'][i]:.4f}, {first['ci_high'][i]:.4f}]"
        )
    click.echo("Co-occurrence (share choosing both): true / estimate")
    click.echo(f"  {'':<{width}}" + "".join(f"{name[:15]:>17}" for name in names))
    for i, name in enumerate(names):
        pair = first["pair_estimate"][i]
        cells = "".join(f"{f'{result.true_pairs[i][j]:.4f}/{pair[j]:.4f}':>17}" for j in range(k))
        click.echo(f"  {name:<{width}}{cells}")
    if result.repeats > 1:
        runs = result.repeats
        click.echo(f"Coverage over {runs:,} repeats (± Monte Carlo standard error):")
        click.echo(
            "  items: "
            + ", ".join(
                f"{name} {_coverage(c, runs)}"
                for name, c in zip(names, result.item_coverage, strict=True)
            )
        )
        pairs = [
            f"{names[i]}+{names[j]} {_coverage(result.pair_coverage[i][j], runs)}"
            for i in range(k)
            for j in range(i + 1, k)
        ]
        click.echo("  pairs: " + ", ".join(pairs))
        conditional = [
            f"{names[j]} given {names[i]} {_coverage(result.conditional_coverage[i][j], runs)}"
            for i in range(k)
            for j in range(k)
            if i != j
        ]
        click.echo("  conditional: " + ", ".join(conditional))
    click.echo(
        f"Intervals: items {result.method} (exact binomial); pairs and conditional shares "
        "normal approximation with plug-in variances (delta method for the conditional)"
    )
    if grpc_info is not None:
        click.echo(transport_line(grpc_info, "the tallies above were"))
