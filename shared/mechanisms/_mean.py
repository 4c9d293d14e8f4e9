"""Means of numeric questions from exact running tallies, with each mechanism's interval."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from numpy.typing import ArrayLike

from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.mechanisms._mean_intervals import MeanInterval
from deniable.shared.mechanisms._rates import MeanReports
from deniable.shared.mechanisms._tally import MeanTally
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MeanEstimate", "MeanTally", "estimate_mean", "estimate_mean_from_reports"]

ESTIMAND = "population mean"


@dataclass(frozen=True)
class MeanEstimate:
    """An estimate of the population mean of a numeric answer from n perturbed reports.

    Attributes:
        n: number of reports.
        estimate: ``estimate_raw`` clipped to [lo, hi].
        estimate_raw: unbiased estimate lo + (hi − lo)(ȳ + 1)/2; may fall outside [lo, hi].
        std_error: empirical standard error (hi − lo)/2 · s/√n from the reports' spread
            (inf when n = 1).
        std_error_worst: theoretical worst-case standard error for the population estimand,
            sqrt(spec.variance_x(n)), beside the empirical one.
        ci_low: lower end of the interval, clipped to [lo, hi] (never above ``estimate``).
        ci_high: upper end, clipped to [lo, hi] (never below ``estimate``; > ci_low).
        method: the interval's construction (the mechanism's
            :meth:`~deniable.shared.mechanisms.NumericMechanism.mean_interval`):
            ``clopper-pearson``, ``bernstein``, ``chernoff``, ``t``, or ``range`` (all of
            [lo, hi]).
        coverage: what the interval promises, in words.
        confidence: nominal confidence level.
        estimand: ``population mean`` (participants i.i.d. from a population).
        epsilon: the mechanism's exact ε.
        mechanism: the mechanism's name.
        lo: lower end of the public range.
        hi: upper end of the public range.
        anytime: whether the interval is a confidence sequence (valid at every look).
    """

    n: int
    estimate: float
    estimate_raw: float
    std_error: float
    std_error_worst: float
    ci_low: float
    ci_high: float
    method: str
    coverage: str
    confidence: float
    estimand: str
    epsilon: float
    mechanism: str
    lo: float
    hi: float
    anytime: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-ready apart from std_error = inf when n = 1)."""
        return asdict(self)

    def wire_fields(self, question: pb.Question) -> dict[str, Any]:
        """``Estimate`` fields: these without the range, which is the question's."""
        fields = self.to_dict()
        del fields["lo"], fields["hi"]
        return fields


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def _float(value: Fraction) -> float:
    """``value`` correctly rounded, or ±inf beyond the float range (never OverflowError)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _to_x(spec: MeanReports, t: Fraction) -> float:
    """The x = lo + (hi − lo)(t + 1)/2 of ``t``, correctly rounded; ±inf beyond the float range."""
    lo, hi = Fraction(spec.lo), Fraction(spec.hi)
    return _float(lo + (hi - lo) * (t + 1) / 2)


def _worst_std_error(spec: MeanReports, n: int) -> float:
    """sqrt(spec.variance_x(n)), inf if the worst-case variance is beyond the float range."""
    try:
        return math.sqrt(spec.variance_x(n, "population"))
    except OverflowError:
        return math.inf


def estimate_mean(spec: MeanReports, tally: MeanTally, confidence: float = 0.95) -> MeanEstimate:
    """Estimate the population mean of x on [lo, hi] from a tally of ``spec``'s reports, O(1).

    Each report is unbiased for its participant's t, so ȳ is unbiased for the population
    mean of t. The interval is the mechanism's (:meth:`NumericMechanism.mean_interval`:
    exact, conservative or t, named in ``method``); it and the estimate map affinely to x
    and are clipped to [lo, hi] (the true mean lies there, so clipping keeps coverage). The
    interval is then widened, if need be, to contain the clipped estimate (widening keeps
    coverage too). A t-interval that lies beyond an end of the range (no width left after
    clipping) gives way to the mechanism's conservative interval; should that have no
    width either (it excludes every possible mean: probability below 1 − confidence), the
    interval is all of [lo, hi], method ``range``.

    Nothing here raises on extreme but valid inputs: a figure beyond the float range comes
    out as ±inf (the surveys' limits, :mod:`deniable.shared.questions`, keep every figure
    finite), and the estimate and the interval ends are always finite.

    Example:
        >>> from deniable.shared.mechanisms import DuchiMechanism
        >>> spec = DuchiMechanism(0.0, 10.0, bound=2.0)
        >>> tally = MeanTally.empty(spec).add(spec, [2.0, -2.0, 2.0, 2.0])
        >>> est = estimate_mean(spec, tally)
        >>> est.estimate_raw, est.method  # ȳ = 1: x = 10
        (10.0, 'clopper-pearson')
    """
    level = check_open_unit("confidence", confidence)
    tally._check_units(spec)
    n = as_count("n", tally.n, minimum=1)
    mean = tally.mean
    raw = _to_x(spec, mean)
    half_range = (spec.hi - spec.lo) / 2.0
    spread = math.sqrt(_float(tally.sample_variance) / n) if n >= 2 else math.inf
    std_error = spread * half_range
    estimate = _clip(raw, spec.lo, spec.hi)
    interval = spec.mean_interval(tally, level)
    low, high = _shown(spec, interval, estimate)
    if not low < high and interval.method == "t":  # beyond an end of the range
        interval = spec.conservative_interval(tally, level)
        low, high = _shown(spec, interval, estimate)
    method, coverage = interval.method, interval.coverage
    if not low < high:
        low, high, method = spec.lo, spec.hi, "range"
        coverage = "the whole range (no narrower interval from these reports)"
    return MeanEstimate(
        n=n,
        estimate=estimate,
        estimate_raw=raw,
        std_error=std_error,
        std_error_worst=_worst_std_error(spec, n),
        ci_low=low,
        ci_high=high,
        method=method,
        coverage=coverage,
        confidence=level,
        estimand=ESTIMAND,
        epsilon=spec.epsilon,
        mechanism=spec.name,
        lo=spec.lo,
        hi=spec.hi,
    )


def _shown(spec: MeanReports, interval: MeanInterval, estimate: float) -> tuple[float, float]:
    """The interval in x units, clipped to [lo, hi] and widened to contain ``estimate``."""
    low, high = (
        _clip(_to_x_float(spec, t), spec.lo, spec.hi) for t in (interval.low, interval.high)
    )
    return min(low, estimate), max(high, estimate)


def _to_x_float(spec: MeanReports, t: float) -> float:
    """``_to_x`` of a float end of an interval, which may be ±inf or NaN (then the range end)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return spec.hi if t > 0 else spec.lo
    return _to_x(spec, Fraction(t))


def estimate_mean_from_reports(
    spec: MeanReports, reports: ArrayLike, confidence: float = 0.95
) -> MeanEstimate:
    """Tally ``reports`` (checked against ``spec``) and estimate the mean from the tally."""
    return estimate_mean(spec, MeanTally.empty(spec).add(spec, reports), confidence)
