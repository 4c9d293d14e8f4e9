"""Text the question types share: a mechanism's summary, a plan's table, the transport line."""

from __future__ import annotations

import math
from typing import Any

from deniable.aggregator.analysis.planning import KindPlan
from deniable.aggregator.questions._base import Emit
from deniable.shared.mechanisms import registered

__all__ = [
    "AUTO_RULE",
    "kind_plan_lines",
    "mechanism_summary",
    "privacy_per_answer",
    "ratio_text",
    "transport_line",
]

AUTO_RULE = "the least Var1 for the worst population, ties to a fixed order"
SHOWN_PARAMETERS = (
    "alpha", "q", "g", "p_star", "q_star", "noise_scale", "grid_bits", "beta", "bound", "p_max",
    "p_center",
)  # fmt: skip


def mechanism_summary(description: dict[str, Any]) -> str:
    """``kind (full name): parameters`` from a mechanism's ``describe()``."""
    kind = str(description["mechanism"])
    name = registered()[kind].title or kind if kind in registered() else kind
    parameters = ", ".join(
        f"{key} = {value:.6g}" if isinstance(value, float) else f"{key} = {value}"
        for key, value in description.items()
        if key in SHOWN_PARAMETERS
    )
    return f"{kind} ({name}): {parameters}"


def ratio_text(empirical: float, theory: float) -> str:
    """An empirical figure over its theory to three places (``-`` when theory is 0)."""
    return f"{empirical / theory:.3f}" if theory > 0 else "-"


def privacy_per_answer(epsilon: float) -> str:
    """``Privacy: epsilon = … per answer (exact)``, or that there is none."""
    if epsilon == float("inf"):
        return "Privacy: none (alpha = 1, epsilon = infinity)"
    return f"Privacy: epsilon = {epsilon:.4f} per answer (exact)"


def transport_line(info: dict[str, Any], read_back: str = "the estimate above was") -> str:
    """Where ``simulate`` sent the reports over gRPC, and how fast (``grpc`` of --json)."""
    where = "embedded daemon" if info["embedded"] else "daemon"
    return (
        f"Transport: gRPC to the {where} at {info['address']}, "
        f"{info['reports_sent']:,} reports in batches of {info['batch_size']:,}: "
        f"{info['reports_per_second']:,.0f} reports/s through SubmitReports; "
        f"{read_back} read back with GetEstimate"
    )


def kind_plan_lines(result: KindPlan, what: str, width: str, emit: Emit) -> None:
    """A plan's table, every mechanism of the type side by side, then the selected one."""
    level = f"{result.confidence:.0%} confidence"
    if result.target_margin is not None:
        emit(f"Participants needed for a margin of ±{result.target_margin:g} on {what} at {level}:")
    else:
        emit(f"Margin on {what} with {result.participants:,} participants at {level}:")
    emit(f"  {'mechanism':<10} {'epsilon':>8} {'Var1':>11} {'participants':>13} {'margin':>10}")
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
        emit(
            f"  {row.mechanism:<10} {row.epsilon:>8.4f} {row.variance_one:>11.5g} "
            f"{row.participants:>13,} {margin:>10}" + (f"  <- {', '.join(marks)}" if marks else "")
        )
    chosen = next(row for row in result.mechanisms if row.mechanism == result.mechanism)
    rule = (
        f" (auto: {AUTO_RULE})"
        if result.requested == "auto"
        else f"; auto would choose {result.auto_choice}"
    )
    emit(f"Selected: {mechanism_summary(chosen.parameters)}{rule}")
    if "epsilon_per_item" in chosen.parameters:
        emit(
            f"Privacy: epsilon = {chosen.epsilon:.4f} per answer (exact), "
            f"{chosen.parameters['epsilon_per_item']:.4f} per item"
        )
    elif math.isfinite(chosen.epsilon):
        emit(f"Privacy: epsilon = {chosen.epsilon:.4f} per answer (exact)")
    else:
        emit("Privacy: none (alpha = 1, epsilon = infinity)")
    emit(f"Method: {result.method}")


def assumed(result: KindPlan) -> str:
    """The share a plan assumes: the worst case, or the one given."""
    return "worst-case share" if result.share is None else f"assumed share p = {result.share:g}"
