"""Sample sizes for multiple-choice and numeric questions, every mechanism side by side."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from deniable.aggregator.analysis._sample_size import (
    Variance,
    categorical_variance,
    check_mean_margin,
    check_share_margin,
    margin_for,
    numeric_variance,
    smallest_n,
)
from deniable.shared._categorical import CATEGORICAL_KINDS, categorical_spec, choose_categorical
from deniable.shared._numeric import NUMERIC_KINDS, numeric_spec
from deniable.shared._validate import as_count, check_confidence, check_unit_interval

__all__ = ["KindPlan", "MechanismPlan", "plan_categorical", "plan_numeric"]

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
    specs: dict[str, Any],
    variance_of: Callable[[Any], Variance],
    margin: float | None,
    participants: int | None,
    confidence: float,
) -> tuple[MechanismPlan, ...]:
    rows = []
    for spec in specs.values():
        variance = variance_of(spec)
        if margin is not None:
            n = smallest_n(margin, confidence, variance)
        else:
            n = as_count("participants", participants, minimum=1)
        rows.append(
            MechanismPlan(
                mechanism=spec.kind,
                participants=n,
                margin=margin_for(n, confidence, variance),
                variance_one=variance(1),
                epsilon=spec.epsilon,
                parameters=spec.describe(),
            )
        )
    return tuple(rows)


def _check_target(margin: float | None, participants: int | None, confidence: float) -> float:
    if (margin is None) == (participants is None):
        raise ValueError("give exactly one of margin or participants")
    if participants is not None:
        as_count("participants", participants, minimum=1)
    return check_confidence(confidence)


def _plan(
    question_type: str,
    requested: str,
    selected: Any,
    auto_choice: str,
    rows: tuple[MechanismPlan, ...],
    margin: float | None,
    level: float,
    **details: Any,
) -> KindPlan:
    chosen = next(row for row in rows if row.mechanism == selected.kind)
    return KindPlan(
        question_type=question_type,
        requested=requested,
        mechanism=chosen.mechanism,
        auto_choice=auto_choice,
        participants=chosen.participants,
        margin=chosen.margin,
        target_margin=margin,
        confidence=level,
        mechanisms=rows,
        **{"share": None, "k": None, "lo": None, "hi": None, **details},
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
    """Plan a k-option question from exactly one of ``margin`` or ``participants``.

    The margin is the half-width of one option's interval at ``confidence``, for an assumed
    share ``p`` or the worst share (None). Every mechanism (GRR, OUE, OLH) is built at the
    same ε (with ``alpha``, GRR's exact ε) and compared; ``mechanism`` picks the headline
    figures and ``auto_choice`` is what :func:`shared._categorical.choose_categorical` picks.

    Example:
        >>> plan = plan_categorical(4, epsilon=1.0, margin=0.05)
        >>> plan.mechanism, [row.mechanism for row in plan.mechanisms]
        ('grr', ['grr', 'oue', 'olh'])
    """
    level = _check_target(margin, participants, confidence)
    target = None if margin is None else check_share_margin(margin)
    share = None if p is None else check_unit_interval("p", p)
    selected = categorical_spec(mechanism, k, epsilon, alpha)
    specs: dict[str, Any] = {selected.kind: selected}
    auto_choice = "grr"  # α = 1 (ε = inf): GRR, the only mechanism without privacy
    if selected.is_private:
        eps = epsilon if epsilon is not None else selected.epsilon
        kinds = [kind for kind in CATEGORICAL_KINDS if kind != "auto"]
        specs = {kind: specs.get(kind) or categorical_spec(kind, selected.k, eps) for kind in kinds}
        auto_choice = choose_categorical(selected.k, eps).kind
    rows = _compare(
        specs, lambda spec: categorical_variance(spec, share), target, participants, level
    )
    return _plan(
        "categorical", mechanism, selected, auto_choice, rows, target, level, share=share,
        k=selected.k,
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
    """Plan a numeric question on [lo, hi] from exactly one of ``margin`` or ``participants``.

    The margin is the half-width of the mean's interval in x units, for the worst
    distribution on [lo, hi] (``spec.variance_x``). Every mechanism is built at ``epsilon``
    and compared; ``auto_choice`` is what ``numeric_spec("auto", ...)`` picks (lowest
    worst-case per-report variance).

    Example:
        >>> plan = plan_numeric(0.0, 100.0, epsilon=1.0, participants=1000)
        >>> plan.auto_choice, round(plan.margin, 2)
        ('hybrid', 7.13)
    """
    level = _check_target(margin, participants, confidence)
    target = None
    if margin is not None:
        target = check_mean_margin(margin)
    selected = numeric_spec(mechanism, lo, hi, epsilon)
    specs = {kind: numeric_spec(kind, lo, hi, epsilon) for kind in NUMERIC_KINDS if kind != "auto"}
    auto_choice = numeric_spec("auto", lo, hi, epsilon).kind
    rows = _compare(specs, numeric_variance, target, participants, level)
    return _plan(
        "numeric", mechanism, selected, auto_choice, rows, target, level, lo=selected.lo,
        hi=selected.hi,
    )  # fmt: skip
