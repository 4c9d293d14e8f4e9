"""Sample sizes for multiple-choice and numeric questions, every mechanism side by side."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from deniable.aggregator.analysis.planning._sample_size import (
    check_mean_margin,
    check_share_margin,
    margin_for,
    smallest_n,
    variance_of,
)
from deniable.shared._validate import as_count, check_confidence, check_unit_interval
from deniable.shared.mechanisms import Mechanism
from deniable.shared.questions import question_type

__all__ = ["KindPlan", "MechanismPlan", "plan_categorical", "plan_numeric", "plan_question"]

KINDS_METHOD = (
    "normal approximation: n = z^2 * Var1 / margin^2, Var1 the per-report variance of the "
    "estimate (population estimand; worst case over true values unless a share is given)"
)


@dataclass(frozen=True)
class MechanismPlan:
    """One mechanism's figures: participants for the margin, or the margin for n.

    Attributes:
        mechanism: the mechanism's kind.
        participants: participants needed (with a target margin) or given.
        margin: half-width z·sqrt(Var₁/n) achieved with ``participants``.
        variance_one: Var₁, the variance of the estimate from one participant.
        epsilon: the mechanism's exact ε.
        parameters: the mechanism's ``describe()``.
    """

    mechanism: str
    participants: int
    margin: float
    variance_one: float
    epsilon: float
    parameters: dict[str, Any]


@dataclass(frozen=True)
class KindPlan:
    """A planned multiple-choice or numeric question, every mechanism of the type compared.

    All figures use the normal approximation: the estimate's variance from n participants
    is Var₁/n, Var₁ the variance one participant's report contributes (population
    estimand), and the interval's half-width is z·sqrt(Var₁/n); so n = z²·Var₁/m², rounded
    up to the smallest integer that reaches the margin m.

    Attributes:
        question_type: ``categorical`` or ``numeric``.
        requested: the mechanism asked for (``auto`` or a kind).
        mechanism: the kind it resolved to; ``participants`` and ``margin`` are its figures.
        auto_choice: the kind ``auto`` picks for these options and ε.
        participants: participants for ``mechanism``.
        margin: margin achieved by ``mechanism`` with ``participants``.
        target_margin: the margin asked for (None when participants were given).
        confidence: confidence level of the margins.
        share: categorical: the assumed share (None = worst case over shares).
        k: categorical: number of options.
        lo: numeric: lower end of the range (margins are in its units).
        hi: numeric: upper end of the range.
        mechanisms: every mechanism of the type, in a fixed order.
        method: how the figures were computed.
    """

    question_type: str
    requested: str
    mechanism: str
    auto_choice: str
    participants: int
    margin: float
    target_margin: float | None
    confidence: float
    share: float | None
    k: int | None
    lo: float | None
    hi: float | None
    mechanisms: tuple[MechanismPlan, ...]
    method: str = KINDS_METHOD

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)


def _compare(
    mechanisms: list[Mechanism],
    share: float | None,
    margin: float | None,
    participants: int | None,
    confidence: float,
) -> tuple[MechanismPlan, ...]:
    rows = []
    for mechanism in mechanisms:
        variance = variance_of(mechanism, share)
        if margin is not None:
            n = smallest_n(margin, confidence, variance)
        else:
            n = as_count("participants", participants, minimum=1)
        rows.append(
            MechanismPlan(
                mechanism=mechanism.name,
                participants=n,
                margin=margin_for(n, confidence, variance),
                variance_one=variance(1),
                epsilon=mechanism.epsilon,
                parameters=mechanism.describe(),
            )
        )
    return tuple(rows)


def plan_question(
    kind: str,
    *domain: Any,
    epsilon: float | None = None,
    alpha: float | None = None,
    mechanism: str = "auto",
    margin: float | None = None,
    participants: int | None = None,
    confidence: float = 0.95,
    p: float | None = None,
) -> KindPlan:
    """Plan a question of type ``kind`` on ``domain`` from one of ``margin`` or ``participants``.

    Every registered mechanism of the type is built at the same ε (with ``alpha``, that
    mechanism's exact ε) and compared; ``mechanism`` picks the headline figures and
    ``auto_choice`` is what the type's ``auto`` rule picks. Shares are planned at an assumed
    share ``p`` or the worst share (None); means for the worst distribution on the range.
    """
    if (margin is None) == (participants is None):
        raise ValueError("give exactly one of margin or participants")
    if participants is not None:
        as_count("participants", participants, minimum=1)
    level = check_confidence(confidence)
    qtype = question_type(kind)
    mean = qtype.estimates_a_mean
    target = None
    if margin is not None:
        target = check_mean_margin(margin) if mean else check_share_margin(margin)
    share = None if p is None or mean else check_unit_interval("p", p)
    selected = qtype.build(mechanism, *domain, epsilon=epsilon, alpha=alpha)
    compared = [selected]
    auto_choice = selected.name  # without privacy (α = 1): only the mechanism asked for
    if selected.is_private:
        eps = epsilon if epsilon is not None else selected.epsilon
        compared = [
            selected if cls.name == selected.name else qtype.build(cls.name, *domain, epsilon=eps)
            for cls in qtype.mechanisms()
            if qtype.plannable(cls)
        ]
        auto_choice = qtype.auto(*domain, epsilon=eps).name
    rows = _compare(compared, share, target, participants, level)
    chosen = next(row for row in rows if row.mechanism == selected.name)
    return KindPlan(
        question_type=kind,
        requested=mechanism,
        mechanism=chosen.mechanism,
        auto_choice=auto_choice,
        participants=chosen.participants,
        margin=chosen.margin,
        target_margin=target,
        confidence=level,
        mechanisms=rows,
        **{"share": share, "k": None, "lo": None, "hi": None, **qtype.domain_fields(selected)},
    )


def plan_categorical(
    k: int,
    *,
    epsilon: float | None = None,
    alpha: float | None = None,
    mechanism: str = "auto",
    margin: float | None = None,
    participants: int | None = None,
    confidence: float = 0.95,
    p: float | None = None,
) -> KindPlan:
    """Plan a k-option question (see :func:`plan_question`).

    Example:
        >>> plan = plan_categorical(4, epsilon=1.0, margin=0.05)
        >>> plan.mechanism, [row.mechanism for row in plan.mechanisms]
        ('grr', ['grr', 'oue', 'olh'])
    """
    return plan_question(
        "categorical", k, epsilon=epsilon, alpha=alpha, mechanism=mechanism, margin=margin,
        participants=participants, confidence=confidence, p=p,
    )  # fmt: skip


def plan_numeric(
    lo: float,
    hi: float,
    *,
    epsilon: float,
    mechanism: str = "auto",
    margin: float | None = None,
    participants: int | None = None,
    confidence: float = 0.95,
) -> KindPlan:
    """Plan a numeric question on [lo, hi] (see :func:`plan_question`); margins in x units.

    Example:
        >>> plan = plan_numeric(0.0, 100.0, epsilon=1.0, participants=1000)
        >>> plan.auto_choice, round(plan.margin, 2)
        ('duchi', 6.71)
    """
    return plan_question(
        "numeric", lo, hi, epsilon=epsilon, mechanism=mechanism, margin=margin,
        participants=participants, confidence=confidence,
    )  # fmt: skip
