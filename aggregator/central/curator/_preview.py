"""Accuracy previews: a query's interval half-width from public facts, no data, no noise."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import PrivacyUnit
from deniable.aggregator.central.curator._mean import (
    PUBLIC_MEAN_METHOD,
    SPLIT_METHOD,
    check_public_n,
)
from deniable.aggregator.central.curator._noise import (
    INTERVAL_METHOD,
    check_confidence,
    check_curator_epsilon,
    discrete_half_width,
    exact_epsilon,
    noise_scale,
)
from deniable.aggregator.central.curator._numeric import SumSpec
from deniable.aggregator.central.curator._release import BONFERRONI
from deniable.aggregator.central.curator._selection import plan_fields, selection_plan
from deniable.aggregator.central.curator._sensitivity import (
    count_sensitivity,
    histogram_sensitivity,
    privacy_fields,
)

__all__ = [
    "Preview",
    "preview_count",
    "preview_histogram",
    "preview_mean",
    "preview_mean_public_n",
    "preview_release",
    "preview_selection",
    "preview_sum",
]


@dataclass(frozen=True)
class Preview:
    """What a query would report, without running it: its noise and interval half-width.

    A discrete Laplace interval's half-width depends only on the scale Δ/ε (Δ from the
    neighbour relation, K and the clip) and the confidence, and the public-N mean's also on
    N: each preview equals the ``half_width`` the query itself reports.

    Attributes:
        query: the query kind.
        epsilon: the ε the query would spend (a preview spends nothing).
        sensitivity: Δ (in the query's own units).
        scale: the noise scale Δ/ε (in the query's own units).
        half_width: the interval's half-width; None for the split mean (see ``parts``).
        confidence: the interval's confidence.
        method: how the interval is computed.
        neighbours: add-remove or replace.
        unit: the privacy unit.
        parts: half-widths of a composite query's parts (the split mean), or other facts.
    """

    query: str
    epsilon: float
    sensitivity: float
    scale: float
    half_width: float | None
    confidence: float
    method: str
    neighbours: str
    unit: PrivacyUnit
    parts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--preview --json`` output carries."""
        return {
            "preview": True,
            "spent": 0.0,
            "query": self.query,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "noise_scale": self.scale,
            **privacy_fields(self.neighbours, self.unit),
            **self.parts,
            "interval": {
                "half_width": self.half_width,
                "confidence": self.confidence,
                "method": self.method,
            },
        }


def _integer(
    query: str, epsilon: float | Fraction, sensitivity: int, neighbours: str, unit: PrivacyUnit,
    confidence: float, method: str = INTERVAL_METHOD,
) -> Preview:  # fmt: skip
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    scale = noise_scale(epsilon, sensitivity)
    half = discrete_half_width(scale, level)
    return Preview(query, eps, sensitivity, float(scale), half, level, method, neighbours, unit)


def preview_count(
    epsilon: float | Fraction, neighbours: str, unit: PrivacyUnit, *, confidence: float = 0.95
) -> Preview:
    """A count's half-width: scale K/ε (the clamp can only narrow the interval)."""
    sensitivity = count_sensitivity(neighbours, unit)
    return _integer("count", epsilon, sensitivity, neighbours, unit, confidence)


def preview_histogram(
    epsilon: float | Fraction, neighbours: str, unit: PrivacyUnit, *, confidence: float = 0.95
) -> Preview:
    """Each bin's half-width: scale K/ε (add-remove) or 2K/ε (replace)."""
    sensitivity = histogram_sensitivity(neighbours, unit)
    return _integer("histogram", epsilon, sensitivity, neighbours, unit, confidence)


def preview_release(
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    cells: int = 1,
    confidence: float = 0.95,
) -> Preview:
    """The half-width of a count from a release summing ``cells`` cells: cells·k at 1 − α/m."""
    level = check_confidence(confidence)
    sensitivity = histogram_sensitivity(neighbours, unit)
    cell = _integer("release", epsilon, sensitivity, neighbours, unit, 1 - (1 - level) / cells)
    per_cell = int(cell.half_width or 0)
    return Preview(
        "release", cell.epsilon, sensitivity, cell.scale, cells * per_cell, level, BONFERRONI,
        neighbours, unit, {"cells": cells, "half_width_per_cell": per_cell},
    )  # fmt: skip


def preview_sum(
    spec: SumSpec,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
) -> Preview:
    """A clipped sum's half-width: k grid steps of scale Δ/ε, times the resolution."""
    delta = spec.sensitivity_units(neighbours, unit)
    steps = _integer("sum", epsilon, delta, neighbours, unit, confidence)
    step = spec.resolution
    return Preview(
        "sum", steps.epsilon, float(delta * step), float(noise_scale(epsilon, delta) * step),
        float(int(steps.half_width or 0) * step), steps.confidence,
        INTERVAL_METHOD + ", in resolution steps", neighbours, unit,
    )  # fmt: skip


def preview_mean(
    spec: SumSpec,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
) -> Preview:
    """The split mean's parts: the sum's and the count's half-widths at ε/2 and 1 − α/2 each.

    The mean's own interval depends on the noisy count (about the sum's half-width plus the
    mean times the count's, over the count), so only the parts are previewed.
    """
    level = check_confidence(confidence)
    half = exact_epsilon(epsilon) / 2
    each = 1 - (1 - level) / 2
    total = preview_sum(spec, half, neighbours, unit, confidence=each)
    count = preview_count(half, neighbours, unit, confidence=each)
    return Preview(
        "mean", check_curator_epsilon(epsilon), total.sensitivity, total.scale, None, level,
        SPLIT_METHOD, neighbours, unit,
        {"parts": {"sum_half_width": total.half_width, "count_half_width": count.half_width,
                   "count_sensitivity": count.sensitivity, "each_confidence": each}},
    )  # fmt: skip


def preview_mean_public_n(
    spec: SumSpec,
    rows: int,
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
) -> Preview:
    """The public-N mean's half-width: k grid steps of scale (hi − lo)/ε, times h/N."""
    check_public_n(neighbours, unit, rows)
    low, high = spec.unit_range
    delta = max(high - low, 1)
    steps = _integer("mean", epsilon, delta, neighbours, unit, confidence)
    step = spec.resolution / rows
    return Preview(
        "mean", steps.epsilon, float(delta * step), float(noise_scale(epsilon, delta) * step),
        float(int(steps.half_width or 0) * step), steps.confidence,
        PUBLIC_MEAN_METHOD, neighbours, unit, {"public_rows": rows},
    )  # fmt: skip


def preview_selection(
    epsilon: float | Fraction,
    delta: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
) -> Preview:
    """A key selection's threshold τ, δ achieved and the released counts' half-width."""
    plan = selection_plan(epsilon, delta, neighbours, unit, confidence=confidence)
    facts = plan_fields(plan)
    return Preview(
        "selection", plan.epsilon, plan.sensitivity, float(plan.scale), plan.half_width,
        plan.confidence, INTERVAL_METHOD, neighbours, unit,
        {key: facts[key] for key in ("delta", "delta_requested", "threshold", "method",
                                     "suppressed")},
    )  # fmt: skip
