"""``deniable-aggregator plan``: participants needed for a margin, or margin for n."""

from __future__ import annotations

import click

from aggregator._planner import plan
from aggregator.cli._common import (
    emit_json,
    mechanism_options,
    privacy_line,
    spec_from_options,
    user_errors,
)


@click.command("plan")
@mechanism_options
@click.option("--margin", type=float, help="Wanted half-width of the interval for the share.")
@click.option("--participants", type=int, help="Number of participants (instead of --margin).")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--p",
    "share",
    type=float,
    default=0.5,
    show_default=True,
    help="Assumed true share; 0.5 is the worst case.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def plan_command(
    alpha: float | None,
    epsilon: float | None,
    margin: float | None,
    participants: int | None,
    confidence: float,
    share: float,
    as_json: bool,
) -> None:
    """Plan a yes/no survey: how many participants a margin of error needs.

    With --margin it prints the participants needed; with --participants it prints the
    margin achieved. Margins use the normal approximation for the population share;
    Clopper-Pearson intervals are slightly wider.
    """
    spec = spec_from_options(alpha, epsilon)
    if (margin is None) == (participants is None):
        raise click.UsageError("give exactly one of --margin or --participants")
    with user_errors():
        result = plan(
            spec, margin=margin, participants=participants, confidence=confidence, p=share
        )
    if as_json:
        emit_json(result.to_dict())
        return
    if margin is not None:
        click.echo(
            f"Participants needed: {result.participants:,} for a margin of ±{margin:g} "
            f"at {confidence:.0%} confidence (assumed share p = {share:g})"
        )
    else:
        click.echo(
            f"Margin achieved: ±{result.margin:.4f} with {result.participants:,} participants "
            f"at {confidence:.0%} confidence (assumed share p = {share:g})"
        )
    click.echo(f"Mechanism: randomized response, alpha = {spec.alpha:.6g}")
    click.echo(privacy_line(spec))
    click.echo(f"Method: {result.method}")
