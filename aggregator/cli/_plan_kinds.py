"""``deniable-aggregator plan`` for categorical, numeric, joint and multi-select questions."""

from __future__ import annotations

import math
from typing import Any

import click

from deniable.aggregator.analysis._distributions import parse_options, parse_shares
from deniable.aggregator.analysis._planner_joint import AssociationPlan, plan_associations
from deniable.aggregator.analysis._planner_kinds import (
    KindPlan,
    plan_categorical,
    plan_numeric,
    plan_question,
)
from deniable.aggregator.analysis._sample_size import margin_for, smallest_n
from deniable.aggregator.cli._common import emit_json, user_errors
from deniable.aggregator.cli._joint import joint_question
from deniable.aggregator.cli._kinds import categorical_inputs, mechanism_summary, numeric_inputs
from deniable.aggregator.cli._plot_plan import PlotRequest, plan_curves
from deniable.shared.mechanisms import ItemRandomizedResponse

__all__ = ["plan_kind"]

AUTO_RULE = "the least Var1 for the worst population, ties to a fixed order"


def plan_kind(
    question_type: str,
    *,
    options: str | None,
    mechanism: str | None,
    lo: float | None,
    hi: float | None,
    parts: tuple[str, ...],
    alpha: float | None,
    distribution: str | None,
    epsilon: float | None,
    margin: float | None,
    participants: int | None,
    confidence: float,
    share: float | None,
    as_json: bool,
    plot: PlotRequest | None = None,
) -> None:
    """Plan a categorical, numeric, joint or multi-select question and print the comparison."""
    associations: list[AssociationPlan] | None = None
    if question_type == "joint":
        question, oracle = joint_question(parts, mechanism, epsilon)
        with user_errors():
            result = plan_question(
                "joint", oracle.k, epsilon=epsilon, mechanism=mechanism or "auto",
                margin=margin, participants=participants, confidence=confidence, p=share,
            )  # fmt: skip
            if distribution is not None:
                associations = plan_associations(
                    question, oracle, parse_shares(distribution), margin=margin,
                    participants=participants, confidence=confidence,
                )  # fmt: skip
    elif question_type == "categorical":
        names, kind = categorical_inputs(options, mechanism, epsilon, alpha)
        with user_errors():
            result = plan_categorical(
                len(names), epsilon=epsilon, alpha=alpha, mechanism=kind, margin=margin,
                participants=participants, confidence=confidence, p=share,
            )  # fmt: skip
    elif question_type == "multi_select":
        if options is None or epsilon is None:
            raise click.UsageError(
                "--type multi_select needs --options (the items, or K) and --epsilon"
            )
        with user_errors():
            items = parse_options(options)
            result = plan_question(
                "multi_select", len(items), epsilon=epsilon, mechanism=mechanism or "auto",
                margin=margin, participants=participants, confidence=confidence, p=share,
            )  # fmt: skip
    else:
        low, high, kind, eps = numeric_inputs(lo, hi, mechanism, epsilon)
        with user_errors():
            result = plan_numeric(
                low, high, epsilon=eps, mechanism=kind, margin=margin,
                participants=participants, confidence=confidence,
            )  # fmt: skip
    pair = _pair_plan(result) if question_type == "multi_select" else None
    curves = None if plot is None else plan_curves(result, plot, target_margin=margin)
    if as_json:
        data = result.to_dict()
        extra: dict[str, Any] = {} if pair is None else {"pair": pair}
        if curves is not None:
            extra["plot"] = curves.to_dict()
        if associations is not None:
            extra["associations"] = [plan.to_dict() for plan in associations]
        emit_json({"type": data.pop("question_type"), **data, **extra})
    else:
        _print_plan(result)
        _print_associations(associations or [], oracle_name=result.mechanism)
        if pair is not None:
            click.echo(
                f"A pair's co-occurrence (share choosing both of two items; worst case, "
                f"Var1 {pair['variance_one']:.5g}): {pair['participants']:,} participants "
                f"for ±{pair['margin']:.4f}"
            )
        if curves is not None:
            click.echo(f"Plot: {curves.file}")


def _print_associations(plans: list[AssociationPlan], oracle_name: str) -> None:
    """One line per pair of scored parts: the correlation's plan at the assumed cells."""
    for plan in plans:
        click.echo(
            f"Correlation of {plan.part_a} and {plan.part_b} (assumed {plan.correlation:.4f} "
            f"from the cells; {oracle_name}, Var1 {plan.correlation_variance_one:.5g}, delta "
            f"method): {plan.participants:,} participants for ±{plan.correlation_margin:.4f} "
            f"(covariance ±{plan.covariance_margin:.4f})"
        )


def _pair_plan(result: KindPlan) -> dict[str, Any]:
    """The same margin (or participants) for a pair's co-occurrence, at its worst case."""
    chosen = next(row for row in result.mechanisms if row.mechanism == result.mechanism)
    parameters = chosen.parameters
    mechanism = ItemRandomizedResponse(int(parameters["k"]), float(parameters["q"]))
    variance = mechanism.pair_variance
    if result.target_margin is not None:
        n = smallest_n(result.target_margin, result.confidence, variance)
    else:
        n = result.participants
    return {
        "participants": n,
        "margin": margin_for(n, result.confidence, variance),
        "variance_one": variance(1),
    }


def _print_plan(result: KindPlan) -> None:
    assumed = "worst-case share" if result.share is None else f"assumed share p = {result.share:g}"
    if result.question_type == "multi_select":
        what = f"one item's share ({result.k} items, {assumed})"
        width = ".4f"
    elif result.k is not None:
        what = f"one option's share ({result.k} options, {assumed})"
        if result.question_type == "joint":
            what = f"one cell's share ({result.k} cells in one report, {assumed})"
        width = ".4f"
    else:
        what = f"the mean (x units on [{result.lo:g}, {result.hi:g}], worst-case values)"
        width = ".4g"
    level = f"{result.confidence:.0%} confidence"
    if result.target_margin is not None:
        click.echo(
            f"Participants needed for a margin of ±{result.target_margin:g} on {what} at {level}:"
        )
    else:
        click.echo(f"Margin on {what} with {result.participants:,} participants at {level}:")
    click.echo(
        f"  {'mechanism':<10} {'epsilon':>8} {'Var1':>11} {'participants':>13} {'margin':>10}"
    )
    for row in result.mechanisms:
        marks = [
            label
            for label, on in (
                ("selected", row.mechanism == result.mechanism),
                ("auto's choice", row.mechanism == result.auto_choice),
            )
            if on
        ]
        margin = "±" + format(row.margin, width)
        click.echo(
            f"  {row.mechanism:<10} {row.epsilon:>8.4f} {row.variance_one:>11.5g} "
            f"{row.participants:>13,} {margin:>10}" + (f"  <- {', '.join(marks)}" if marks else "")
        )
    chosen = next(row for row in result.mechanisms if row.mechanism == result.mechanism)
    rule = (
        f" (auto: {AUTO_RULE})"
        if result.requested == "auto"
        else f"; auto would choose {result.auto_choice}"
    )
    click.echo(f"Selected: {mechanism_summary(chosen.parameters)}{rule}")
    if "epsilon_per_item" in chosen.parameters:
        click.echo(
            f"Privacy: epsilon = {chosen.epsilon:.4f} per answer (exact), "
            f"{chosen.parameters['epsilon_per_item']:.4f} per item"
        )
    elif math.isfinite(chosen.epsilon):
        click.echo(f"Privacy: epsilon = {chosen.epsilon:.4f} per answer (exact)")
    else:
        click.echo("Privacy: none (alpha = 1, epsilon = infinity)")
    click.echo(f"Method: {result.method}")
