"""Sample-size planning for yes/no questions: participants for a margin, margin for n.

Any yes/no mechanism plans: the figures need only its ``estimate_variance``; the
keep-probability α and the 2α approximation are shown when the mechanism has them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from deniable.shared._validate import as_count, as_real, check_confidence, check_unit_interval
from deniable.shared.mechanisms import Mechanism
from deniable.shared.stats import normal_quantile

__all__ = ["Plan", "margin_achieved", "participants_needed", "plan"]

PLAN_METHOD = "normal approximation: margin = z * sqrt(Var(p_hat)), population estimand"


@dataclass(frozen=True)
class Plan:
    """A planned survey: how many participants give which margin at which privacy cost."""

    participants: int
    margin: float
    confidence: float
    p: float
    alpha: float | None
    epsilon: float
    epsilon_approx: float | None
    method: str = PLAN_METHOD

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)


def _unit_variance(spec: Mechanism, p: float) -> float:
    """n·Var(p̂) for the population estimand (randomized response: (1−α²)/(4α²) + p(1−p))."""
    return spec.estimate_variance(1, p)


def participants_needed(
    margin: float, spec: Mechanism, confidence: float = 0.95, p: float = 0.5
) -> int:
    """Smallest n with z·sqrt(V/n) <= margin, V = (1−α²)/(4α²) + p(1−p) (p = ½ is worst)."""
    m = as_real("margin", margin)
    if not (0.0 < m <= 1.0):  # also rejects NaN
        raise ValueError(f"margin must be in (0, 1], got {m!r}")
    z = normal_quantile(check_confidence(confidence))
    variance = _unit_variance(spec, check_unit_interval("p", p))
    n = max(1, math.ceil(z * z * variance / (m * m)))
    # Guard against float rounding on either side of the exact ceiling.
    while n > 1 and z * math.sqrt(variance / (n - 1)) <= m:
        n -= 1
    while z * math.sqrt(variance / n) > m:
        n += 1
    return n


def margin_achieved(
    participants: int, spec: Mechanism, confidence: float = 0.95, p: float = 0.5
) -> float:
    """Half-width z·sqrt(V/n) of the normal-approximation interval from n participants."""
    n = as_count("participants", participants, minimum=1)
    z = normal_quantile(check_confidence(confidence))
    return z * math.sqrt(_unit_variance(spec, check_unit_interval("p", p)) / n)


def plan(
    spec: Mechanism,
    *,
    margin: float | None = None,
    participants: int | None = None,
    confidence: float = 0.95,
    p: float = 0.5,
) -> Plan:
    """Plan from exactly one of ``margin`` (gives participants) or ``participants``."""
    if (margin is None) == (participants is None):
        raise ValueError("give exactly one of margin or participants")
    if margin is not None:
        n = participants_needed(margin, spec, confidence, p)
    else:
        n = as_count("participants", participants, minimum=1)
    return Plan(
        participants=n,
        margin=margin_achieved(n, spec, confidence, p),
        confidence=float(confidence),
        p=float(p),
        alpha=spec.describe().get("alpha"),
        epsilon=spec.epsilon,
        epsilon_approx=spec.describe().get("epsilon_approx"),
    )
