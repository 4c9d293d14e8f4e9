"""``deniable-aggregator simulate``: a simulated population through client and estimator."""

from __future__ import annotations

import sys

import click

from aggregator._intervals import METHODS
from aggregator._simulate import SimulationResult, simulate_binary
from aggregator.cli._common import (
    emit_json,
    mechanism_options,
    privacy_line,
    spec_from_options,
    user_errors,
)
from shared import ESTIMANDS, RandomizedResponseSpec


@click.command("simulate")
@click.option("--participants", type=int, required=True, help="Participants per survey.")
@click.option("--p", "share", type=float, required=True, help="True population yes-share.")
@mechanism_options
@click.option("--repeats", type=int, default=1, show_default=True, help="Independent surveys.")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--method", type=click.Choice(list(METHODS)), default="clopper-pearson", show_default=True
)
@click.option("--seed", type=int, help="Seed for a reproducible run (seeded PCG64, not CSPRNG).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def simulate_command(
    participants: int,
    share: float,
    alpha: float | None,
    epsilon: float | None,
    repeats: int,
    confidence: float,
    method: str,
    seed: int | None,
    as_json: bool,
) -> None:
    """Simulate a yes/no survey of a population with true share --p.

    Each simulated participant randomizes their answer with the client library (OS CSPRNG
    unless --seed is given); the aggregator's estimator turns the reports into an estimate
    and interval. With --repeats > 1 it reports the interval's empirical coverage and the
    spread of the estimate beside theory.
    """
    spec = spec_from_options(alpha, epsilon)
    with user_errors():
        if repeats > 1:
            with click.progressbar(length=repeats, label="simulating", file=sys.stderr) as bar:
                result = simulate_binary(
                    participants,
                    share,
                    spec,
                    repeats=repeats,
                    confidence=confidence,
                    method=method,
                    seed=seed,
                    progress=bar.update,
                )
        else:
            result = simulate_binary(
                participants, share, spec, confidence=confidence, method=method, seed=seed
            )
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_result(result, spec)


def _print_result(result: SimulationResult, spec: RandomizedResponseSpec) -> None:
    first = result.first
    click.echo(
        f"Simulated {result.participants:,} participants with true share p = {result.p:g} "
        f"(share in this sample: {result.sample_share:.4f}; randomness: {result.randomness})"
    )
    click.echo(f"Mechanism: randomized response, alpha = {spec.alpha:.6g}")
    click.echo(privacy_line(spec))
    click.echo(
        f"Estimate: {first.estimate:.4f}  (unbiased raw {first.estimate_raw:.4f}, "
        f"std error {first.std_error:.4f})"
    )
    click.echo(
        f"{first.confidence:.0%} CI: [{first.ci_low:.4f}, {first.ci_high:.4f}]  "
        f"({first.method}; estimand: {ESTIMANDS[first.estimand]})"
    )
    if result.repeats > 1:
        assert result.coverage is not None
        assert result.coverage_se is not None
        click.echo(f"Over {result.repeats:,} repeats:")
        click.echo(
            f"  CI coverage: {result.coverage:.4f} ± {result.coverage_se:.4f} (Monte Carlo SE); "
            f"exact {result.coverage_exact:.4f}; nominal {first.confidence:g}"
        )
        click.echo(f"  mean CI width: {result.mean_width:.4f}")
        click.echo(
            f"  raw estimate: mean {result.mean_estimate_raw:.4f} (truth {result.p:g}), "
            f"std {result.std_estimate_raw:.4f} (theory {result.std_theory:.4f})"
        )
        click.echo(
            f"  throughput: {result.reports_per_second:,.0f} reports/s in-process "
            "(drawing answers, perturbing, estimating)"
        )
