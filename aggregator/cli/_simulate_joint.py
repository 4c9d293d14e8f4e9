"""``deniable-aggregator simulate --type joint``: correlated answers, intervals' coverage."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from deniable.aggregator.analysis._distributions import parse_shares
from deniable.aggregator.analysis._simulate_grpc import (
    QUESTION_ID,
    GrpcTransport,
    aggregator_connection,
)
from deniable.aggregator.analysis._simulate_joint import JointSimulation, simulate_joint
from deniable.aggregator.cli._common import emit_json, read_token, remote_errors, user_errors
from deniable.aggregator.cli._joint import joint_question
from deniable.aggregator.cli._progress import simulation_progress
from deniable.shared._validate import as_count
from deniable.shared.transport import TlsConfig

__all__ = ["simulate_joint_command"]


def simulate_joint_command(
    *,
    parts: tuple[str, ...],
    participants: int,
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
    """Simulate a joint question over gRPC or in process, and print its coverage."""
    question, oracle = joint_question(parts, mechanism, epsilon)
    question.id = QUESTION_ID
    if distribution is None:
        raise click.UsageError(
            f"--type joint needs --distribution: {oracle.k} cell shares, the first part "
            "slowest (e.g. 0.5,0.1,0.1,0.3 for two yes/no parts: no-no, no-yes, yes-no, yes-yes)"
        )
    if transport == "inprocess" and server is not None:
        raise click.UsageError("--server needs --transport grpc")
    token = read_token(admin_token_file) if server is not None else None
    with user_errors():  # checked before a progress bar starts
        shares = parse_shares(distribution)
        as_count("participants", participants, minimum=1)
        as_count("repeats", repeats, minimum=1)
    grpc: GrpcTransport | None = None
    with ExitStack() as stack:
        stack.enter_context(user_errors())
        stack.enter_context(remote_errors(server or "the embedded aggregator"))
        sent, repeated = simulation_progress(
            stack, grpc=transport == "grpc", participants=participants, repeats=repeats,
            as_json=as_json,
        )  # fmt: skip
        if transport == "grpc":
            client, address = stack.enter_context(
                aggregator_connection(server, token, batch_size, tls)
            )
            grpc = GrpcTransport(
                client, oracle, address, confidence, method, batch_size,
                embedded=server is None, question=question, progress=sent,
            )  # fmt: skip
        result = simulate_joint(
            question, oracle, participants, shares, repeats=repeats, confidence=confidence,
            seed=seed, submit=grpc.exchange if grpc is not None else None, progress=repeated,
        )  # fmt: skip
    grpc_info = grpc.summary() if grpc is not None else None
    if as_json:
        emit_json({"type": "joint", **result.to_dict(), "grpc": grpc_info})
        return
    _print(result, grpc_info)


def _print(result: JointSimulation, grpc_info: dict[str, Any] | None) -> None:
    first = result.first
    click.echo(
        f"Simulated {result.participants:,} participants answering a joint question of "
        f"{result.k} cells in ONE report ({result.mechanism}, epsilon = {result.epsilon:.4f}; "
        f"randomness: {result.randomness})"
    )
    click.echo(f"{'cell':<34}{'truth':>8}{'estimate':>10}  {'CI':<18}{'coverage':>9}")
    for name, truth, option, cover in zip(
        result.cells, result.truth, first["options"], result.cell_coverage, strict=True
    ):
        ci = f"[{option['ci_low']:.4f}, {option['ci_high']:.4f}]"
        click.echo(f"{name:<34}{truth:>8.4f}{option['estimate']:>10.4f}  {ci:<18}{cover:>9.4f}")
    for marginal in first["marginals"]:
        coverage = result.marginal_coverage[marginal["part"]]
        shown = ", ".join(
            f"{value['option']} {value['estimate']:.4f} (coverage {cover:.4f})"
            for value, cover in zip(marginal["values"], coverage, strict=True)
        )
        click.echo(f"marginal {marginal['part']}: {shown}")
    for truths, pair in zip(result.associations, first["associations"], strict=True):
        click.echo(
            f"{pair['part_a']} and {pair['part_b']}: correlation {pair['correlation']:.4f} "
            f"[{pair['correlation_low']:.4f}, {pair['correlation_high']:.4f}] (truth "
            f"{truths['correlation']:.4f}, coverage {truths['correlation_coverage']:.4f}); "
            f"covariance {pair['covariance']:.4f} (truth {truths['covariance']:.4f}, coverage "
            f"{truths['covariance_coverage']:.4f})"
        )
    if result.repeats == 1:
        click.echo(
            "One survey: each coverage is 1 if its interval covered the truth, else 0 "
            "(--repeats N measures coverage)"
        )
    else:
        click.echo(
            f"Coverage over {result.repeats:,} repeats (nominal {result.confidence:g} each); "
            f"all cells at once: {result.cells_all_coverage:.4f}"
        )
    if grpc_info is not None:
        click.echo(
            f"Transport: gRPC to {grpc_info['address']} "
            f"({'embedded daemon' if grpc_info['embedded'] else 'remote'}), "
            f"{grpc_info['reports_sent']:,} reports"
        )
