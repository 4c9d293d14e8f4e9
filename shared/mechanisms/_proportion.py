"""Debiased yes/no estimates with confidence intervals that state what they cover."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import tightest_epsilon
from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms._parameters import check_alpha, grr_ratio
from deniable.shared.mechanisms._rates import BinaryRates
from deniable.shared.stats import Estimand, binomial_interval, check_estimand, check_method
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "PROPORTION_COVERAGE",
    "KeepRates",
    "ProportionEstimate",
    "debias",
    "estimate_proportion",
    "keep_probability",
    "keep_rates",
    "proportion_arrays",
    "report_rate",
]

PROPORTION_COVERAGE = (
    "the yes-share (one interval, so simultaneous changes nothing); it contains the clipped "
    "estimate"
)
"""What a yes/no interval promises, in words (``Estimate.coverage``)."""


@dataclass(frozen=True)
class ProportionEstimate:
    """An estimate of the true yes-share from n randomized reports.

    Field names match the wire contract and every ``--json`` output.

    Attributes:
        n: number of reports.
        estimate: post-processed estimate, ``estimate_raw`` clipped to [0, 1].
        estimate_raw: unbiased estimate p̂ = (Y/n − (1−α)/2)/α; may fall outside [0, 1].
        std_error: estimated standard error of ``estimate_raw`` for the estimand.
        ci_low: lower confidence bound, in [0, 1]; ``ci_low <= estimate <= ci_high``.
        ci_high: upper confidence bound, in [0, 1].
        method: interval method (see ``deniable.shared.stats.METHODS``).
        confidence: nominal confidence level of the interval.
        estimand: what the interval covers (see ``deniable.shared.stats.ESTIMANDS``).
        alpha: the mechanism's keep-probability.
        epsilon: the mechanism's exact ε = ln((1+α)/(1−α)).
        epsilon_approx: 2α, the textbook approximation (it understates ε).
        coverage: what the interval promises, in words.
        anytime: whether the interval is a confidence sequence (valid at every look).
    """

    n: int
    estimate: float
    estimate_raw: float
    std_error: float
    ci_low: float
    ci_high: float
    method: str
    confidence: float
    estimand: str
    alpha: float
    epsilon: float
    epsilon_approx: float
    coverage: str = PROPORTION_COVERAGE
    anytime: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-ready apart from ε = inf when α = 1)."""
        return asdict(self)

    def wire_fields(self, question: pb.Question) -> dict[str, Any]:
        """``Estimate`` fields: exactly these (the service adds the mechanism's name)."""
        return self.to_dict()


@dataclass(frozen=True)
class KeepRates:
    """The yes/no channel of keep-probability α: the truth w.p. α, else a fair coin.

    P(yes | yes) = (1+α)/2 and P(yes | no) = (1−α)/2, exactly (α is a dyadic rational).
    A :class:`BinaryRates`; randomized response has the same rates.
    """

    alpha: float

    @property
    def p_star_exact(self) -> Fraction:
        """(1+α)/2."""
        return (1 + Fraction(self.alpha)) / 2

    @property
    def q_star_exact(self) -> Fraction:
        """(1−α)/2."""
        return (1 - Fraction(self.alpha)) / 2


def keep_rates(alpha: float) -> KeepRates:
    """:class:`KeepRates` for a checked α in (0, 1] (the error names ``alpha``)."""
    return KeepRates(check_alpha(alpha))


def keep_probability(rates: BinaryRates) -> tuple[float, float]:
    """(q, α) as floats: P(yes | no) and α = p − q, each the correctly rounded exact value.

    Raises:
        ValueError: the channel is not symmetric (p + q ≠ 1) or p <= q.
    """
    p, q = rates.p_star_exact, rates.q_star_exact
    if p + q != 1 or not q < p:
        raise ValueError(
            f"the yes/no estimator needs a symmetric channel with p > q, got p={p}, q={q}"
        )
    return float(q), float(p - q)


def report_rate(rates: BinaryRates, p: Any) -> Any:
    """λ = P(report = yes) = αp + (1−α)/2 for a true share p (float or array)."""
    q, alpha = keep_probability(rates)
    return alpha * p + q


def debias(rates: BinaryRates, lam: Any) -> Any:
    """Invert λ = αp + (1−α)/2: p = (λ − (1−α)/2)/α (unbiased when λ is Y/n)."""
    q, alpha = keep_probability(rates)
    return (lam - q) / alpha


def proportion_arrays(
    ones: ArrayLike,
    n: int,
    spec: BinaryRates,
    confidence: float,
    method: str,
    estimand: Estimand,
) -> dict[str, NDArray[np.float64]]:
    """Vectorized core of :func:`estimate_proportion`: one estimate per entry of ``ones``.

    Arguments are assumed validated. The interval is computed for the report rate λ and
    mapped through p = (λ − (1−α)/2)/α, then clipped to [0, 1]; this keeps the coverage of
    the λ interval because the map is monotone and the true p lies in [0, 1]. It is then
    widened, if need be, to contain the clipped estimate (a superset covers as often).
    """
    y = np.asarray(ones, dtype=np.float64)
    q, alpha = keep_probability(spec)
    raw = (y / n - q) / alpha
    clipped = np.clip(raw, 0.0, 1.0)
    lam_low, lam_high = binomial_interval(y, n, confidence, method)
    a2 = alpha * alpha
    if estimand == "population":
        # Plug in the clipped estimate: λ stays inside [(1−α)/2, (1+α)/2], so the standard
        # error is not reported as 0 when every report happens to agree.
        lam = alpha * clipped + q
        variance = lam * (1.0 - lam) / (a2 * n)
    else:
        variance = np.full_like(y, (1.0 - a2) / (4.0 * a2 * n))
    return {
        "estimate": clipped,
        "estimate_raw": raw,
        "std_error": np.sqrt(variance),
        "ci_low": np.minimum(np.clip((lam_low - q) / alpha, 0.0, 1.0), clipped),
        "ci_high": np.maximum(np.clip((lam_high - q) / alpha, 0.0, 1.0), clipped),
    }


def estimate_proportion(
    ones: int,
    n: int,
    alpha: float,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    estimand: Estimand = "population",
) -> ProportionEstimate:
    """Estimate the true yes-share from ``ones`` yes-reports among ``n`` randomized reports.

    Args:
        ones: number of reports that say yes (Y).
        n: number of reports, at least 1.
        alpha: keep-probability α of the randomized response the reports came from.
        confidence: nominal confidence level, strictly between 0 and 1.
        method: ``clopper-pearson`` (default, never below nominal), ``wilson``, ``wald``
            or ``chebyshev``.
        estimand: ``population`` (default: participants i.i.d. from a population) or
            ``respondents`` (the share among exactly these n respondents). The interval is
            the same binomial interval for both; the standard error differs.

    Returns:
        A frozen :class:`ProportionEstimate`.

    Example:
        >>> estimate_proportion(9, 18, alpha=0.5).estimate_raw
        0.5
    """
    count = as_count("n", n, minimum=1)
    yes = as_count("ones", ones)
    if yes > count:
        raise ValueError(f"ones must be <= n, got ones={yes} > n={count}")
    spec = keep_rates(alpha)
    level = check_confidence(confidence)
    check_method(method)
    check_estimand(estimand)
    arrays = proportion_arrays(np.array([yes]), count, spec, level, method, estimand)
    first = {name: float(values[0]) for name, values in arrays.items()}
    return ProportionEstimate(
        n=count,
        estimate=first["estimate"],
        estimate_raw=first["estimate_raw"],
        std_error=first["std_error"],
        ci_low=first["ci_low"],
        ci_high=first["ci_high"],
        method=method,
        confidence=level,
        estimand=estimand,
        alpha=spec.alpha,
        epsilon=tightest_epsilon(grr_ratio(spec.alpha, 2)),
        epsilon_approx=2.0 * spec.alpha,
    )
