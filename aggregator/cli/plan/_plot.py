"""``plan --plot FILE``: participants needed (or margin achieved) against ε, per mechanism."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from deniable.aggregator.analysis.planning import KindPlan, Plan, plan, plan_question
from deniable.aggregator.cli._common import user_errors
from deniable.aggregator.cli._plot import (
    check_plot_path,
    epsilon_axis,
    parse_epsilons,
    pyplot,
    save,
)
from deniable.shared.mechanisms import RandomizedResponse

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLAN_EPSILONS", "PlanCurves", "PlotRequest", "plan_curves", "plot_request"]

PLAN_EPSILONS = tuple(2.0 ** (step / 2.0) for step in range(-4, 7))
"""ε from 0.25 to 8 in steps of √2: the default x values of ``plan --plot``."""


@dataclass(frozen=True)
class PlotRequest:
    """Where to draw the plan, and at which ε."""

    path: Path
    epsilons: tuple[float, ...]


@dataclass(frozen=True)
class PlanCurves:
    """The plan at every ε of the plot, one curve per mechanism.

    Attributes:
        file: where the figure was written.
        epsilons: the x values (ε per answer; a multi-select question's total).
        mechanisms: per mechanism (in the plan's order), ``participants`` and ``margin``
            at each ε: participants for the target margin, or the margin with the
            participants given.
        target_margin: the margin planned for (None when participants were given).
        participants: the participants given (None when a margin was).
        chosen_epsilon: the plan's own ε (marked on the plot; None when not finite).
    """

    file: str
    epsilons: tuple[float, ...]
    mechanisms: dict[str, dict[str, list[float]]]
    target_margin: float | None
    participants: int | None
    chosen_epsilon: float | None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (the ``plot`` member of ``plan --json``)."""
        return asdict(self)


def plot_request(plot: Path | None, epsilons: str | None) -> PlotRequest | None:
    """Check ``--plot`` and ``--epsilons`` (and that matplotlib imports) before any work."""
    if plot is None:
        if epsilons is not None:
            raise click.UsageError("--epsilons needs --plot")
        return None
    check_plot_path(plot)
    try:
        values = PLAN_EPSILONS if epsilons is None else parse_epsilons(epsilons)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--epsilons") from None
    pyplot()  # a missing extra fails before the work, naming it
    return PlotRequest(plot, values)


def plan_curves(
    result: Plan | KindPlan, request: PlotRequest, *, target_margin: float | None
) -> PlanCurves:
    """Plan again at every ε of ``request``, as ``result`` was planned (same margin or n)."""
    curves: dict[str, dict[str, list[float]]] = {}
    given = None if target_margin is not None else result.participants
    with user_errors():
        for epsilon in request.epsilons:
            if isinstance(result, Plan):
                rows = [("rr", *_plan_binary(result, epsilon, target_margin))]
                chosen = result.epsilon
            else:
                domain = (result.k,) if result.k is not None else (result.lo, result.hi)
                swept = plan_question(
                    result.question_type, *domain, epsilon=epsilon, margin=target_margin,
                    participants=given, confidence=result.confidence, p=result.share,
                )  # fmt: skip
                rows = [(row.mechanism, row.participants, row.margin) for row in swept.mechanisms]
                chosen = next(
                    row.epsilon for row in result.mechanisms if row.mechanism == result.mechanism
                )
            for mechanism, n, margin in rows:
                curve = curves.setdefault(mechanism, {"participants": [], "margin": []})
                curve["participants"].append(n)
                curve["margin"].append(margin)
    curves_of = PlanCurves(
        file=str(request.path),
        epsilons=request.epsilons,
        mechanisms=curves,
        target_margin=target_margin,
        participants=given,
        chosen_epsilon=chosen if math.isfinite(chosen) else None,
    )
    save(figure_of(curves_of, result.confidence), request.path)
    return curves_of


def _plan_binary(result: Plan, epsilon: float, target_margin: float | None) -> tuple[int, float]:
    swept = plan(
        RandomizedResponse.from_epsilon(epsilon),
        margin=target_margin,
        participants=None if target_margin is not None else result.participants,
        confidence=result.confidence,
        p=result.p,
    )
    return swept.participants, swept.margin


def figure_of(curves: PlanCurves, confidence: float) -> Figure:
    """Participants needed (or margin achieved) against ε, log-log, one line per mechanism."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    field = "participants" if curves.target_margin is not None else "margin"
    for mechanism, curve in curves.mechanisms.items():
        axes.plot(curves.epsilons, curve[field], "o-", markersize=3, label=mechanism)
    if curves.chosen_epsilon is not None:
        axes.axvline(curves.chosen_epsilon, color="0.4", linestyle=":", label="this plan's ε")
    epsilon_axis(axes)
    axes.set_yscale("log")
    if curves.target_margin is not None:
        axes.set_ylabel("participants needed")
        axes.set_title(f"Participants for a margin of ±{curves.target_margin:g} ({confidence:.0%})")
    else:
        axes.set_ylabel("margin (half-width)")
        axes.set_title(f"Margin with {curves.participants:,} participants ({confidence:.0%})")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    return cast("Figure", figure)
