"""``deniable-aggregator plan``: participants needed for a margin, or margin for n."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from deniable.aggregator.cli._common import (
    emit_json,
    mechanism_options,
    overflow_is_invalid_input,
    user_errors,
)
from deniable.aggregator.cli._question_spec import QuestionInputs, question_options
from deniable.aggregator.cli.plan._plot import plan_curves, plot_request
from deniable.aggregator.questions import PlanRequest


@click.command("plan")
@question_options
@mechanism_options
@click.option(
    "--margin",
    type=float,
    help="Wanted half-width of the interval: for a share (binary, categorical, one item's "
    "share for multi_select) or for the mean in the question's units (numeric).",
)
@click.option("--participants", type=int, help="Number of participants (instead of --margin).")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--p",
    "share",
    type=float,
    help="Assumed true share (binary: yes-share, default 0.5; categorical: one option's "
    "share, multi_select: one item's share, default the worst case).",
)
@click.option(
    "--distribution",
    help="joint: assumed true cell shares (the first part slowest, summing to 1), to plan "
    "also the correlation of every two yes/no or numeric parts for the same --margin.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw participants needed (with --margin; or the margin, with --participants) "
    "against epsilon, one line per mechanism, to FILE (.png, .svg or .pdf; needs the plot extra).",
)
@click.option(
    "--epsilons",
    metavar="E1,E2,...",
    help="With --plot: the epsilons drawn (increasing; default 0.25 to 8 in steps of sqrt 2).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@overflow_is_invalid_input
def plan_command(
    margin: float | None,
    participants: int | None,
    confidence: float,
    share: float | None,
    distribution: str | None,
    plot: Path | None,
    epsilons: str | None,
    as_json: bool,
    **question: Any,
) -> None:
    """Plan a survey question: how many participants a margin of error needs.

    With --margin it prints the participants needed; with --participants it prints the
    margin achieved. Margins use the normal approximation, n = z^2 * Var1 / margin^2 with
    Var1 the variance of the estimate from one participant (population estimand);
    Clopper-Pearson and t intervals are slightly wider. For --type categorical, numeric or
    joint every mechanism of the type is shown side by side, with the one --mechanism auto
    picks; a joint question (--part, once per part) is planned for one cell's share, and
    with --distribution (assumed cell shares) for the correlation of its parts too. For
    --type multi_select (--options: the items, --epsilon: the question's total, split over
    the items) the margin is on one item's share.

    The question is given as `survey create` takes it: --spec FILE (one question's entry,
    or a survey spec and --question ID), or --type and the options that describe it.

    --plot FILE plans again at each of --epsilons and draws the participants needed (or
    the margin achieved) against epsilon, one line per mechanism; --json then has the
    drawn numbers under "plot".
    """
    if (margin is None) == (participants is None):
        raise click.UsageError("give exactly one of --margin or --participants")
    request = plot_request(plot, epsilons)
    inputs = QuestionInputs(question)
    inputs.reject_inputs(inputs.analysis.plan_inputs, ["share", "distribution"], "")
    asked = inputs.item
    with user_errors():
        outcome = inputs.analysis.plan(
            inputs.question, inputs.mechanism,
            PlanRequest(
                margin=margin, participants=participants, confidence=confidence, share=share,
                distribution=distribution, mechanism=str(asked.get("mechanism", "auto")),
                epsilon=asked.get("epsilon"), alpha=asked.get("alpha"),
            ),
        )  # fmt: skip
    curves = None
    if request is not None:
        curves = plan_curves(outcome.result, request, target_margin=margin)
    if as_json:
        emit_json(outcome.document | ({} if curves is None else {"plot": curves.to_dict()}))
        return
    outcome.show(click.echo)
    if curves is not None:
        click.echo(f"Plot: {curves.file}")
