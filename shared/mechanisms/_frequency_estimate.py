"""Debiased option frequencies from support counts: intervals, simplex projection, coverage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms._rates import SupportRates
from deniable.shared.stats import (
    Estimand,
    binomial_interval,
    check_estimand,
    check_method,
    project_to_simplex,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "FrequencyEstimate",
    "RateInterval",
    "estimate_frequencies",
    "exact_frequency_coverage",
    "frequency_arrays",
    "frequency_coverage",
    "method_interval",
    "share_intervals",
    "support_floats",
    "support_variance",
]

_TAIL = 1e-16  # binomial mass left out on each side when summing the pmf
_SLACK = 1e-12  # outward slack of the simplex tightening, far above its rounding error

RateInterval = Callable[
    [NDArray[np.float64], int, float], tuple[NDArray[np.float64], NDArray[np.float64]]
]
"""(support counts C, n, confidence) ↦ (low, high): an interval for each support rate λ_v.

Applied elementwise to counts of any shape; each interval must contain its λ_v with at
least ``confidence`` (per entry), and lie in [0, 1]. :func:`method_interval` gives the
binomial ones; an anytime-valid interval for the rate plugs in the same way.
"""


def method_interval(method: str) -> RateInterval:
    """The binomial interval ``method`` (see ``deniable.shared.stats.METHODS``) for λ_v."""
    check_method(method)

    def interval(
        counts: NDArray[np.float64], n: int, confidence: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return binomial_interval(counts, n, confidence, method)

    return interval


def frequency_coverage(k: int, simultaneous: bool) -> str:
    """What the intervals of a k-option estimate promise, in words (``Estimate.coverage``)."""
    widened = "each widened where needed to contain the projected estimate"
    if simultaneous:
        return (
            f"simultaneous over {k} options: Bonferroni (each option at confidence "
            f"1 - (1 - C)/{k}), tightened to the simplex; {widened}"
        )
    return (
        f"per option (not simultaneous: with {k} options the chance that all cover at once "
        f"is lower); {widened}"
    )


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated share of each option from n multiple-choice reports.

    Tuples hold one entry per option 0..k−1.

    Attributes:
        n: number of reports.
        k: number of options.
        estimate: ``estimate_raw`` projected onto the simplex (non-negative, sums to 1).
        estimate_raw: unbiased f̂_v = (C_v/n − q*)/(p* − q*); may fall outside [0, 1] and
            outside the interval (the interval is for the share, and contains ``estimate``).
        std_error: estimated standard error of each raw estimate for the estimand.
        ci_low: lower confidence bound for each share; ``ci_low <= estimate <= ci_high``.
        ci_high: upper confidence bound for each share.
        support_counts: C_v, the number of reports that support option v.
        method: interval method (see ``deniable.shared.stats.METHODS``).
        confidence: nominal confidence level of each interval.
        estimand: what the intervals cover (see ``deniable.shared.stats.ESTIMANDS``).
        mechanism: the mechanism's name (``grr``, ``oue``, ``olh``, ...).
        epsilon: the mechanism's exact ε.
        alpha: the keep-probability α of GRR and OLH (0 for mechanisms without one).
        coverage: what the intervals promise, in words (:func:`frequency_coverage`).
        anytime: whether the intervals are confidence sequences (valid at every look).
        simultaneous: whether the intervals cover all k shares at once with ``confidence``
            (else each covers its own share).
    """

    n: int
    k: int
    estimate: tuple[float, ...]
    estimate_raw: tuple[float, ...]
    std_error: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    support_counts: tuple[int, ...]
    method: str
    confidence: float
    estimand: str
    mechanism: str
    epsilon: float
    alpha: float = 0.0
    coverage: str = ""
    anytime: bool = False
    simultaneous: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples become lists)."""
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in asdict(self).items()
        }

    def wire_fields(self, question: pb.Question) -> dict[str, Any]:
        """``Estimate`` fields: one ``OptionEstimate`` per option, named as in the question."""
        names = list(question.categorical.options) or [str(v) for v in range(self.k)]
        options = [
            pb.OptionEstimate(
                option=name,
                estimate=self.estimate[i],
                estimate_raw=self.estimate_raw[i],
                ci_low=self.ci_low[i],
                ci_high=self.ci_high[i],
                std_error=self.std_error[i],
                support=self.support_counts[i],
            )
            for i, name in enumerate(names)
        ]
        return {
            "n": self.n,
            "confidence": self.confidence,
            "method": self.method,
            "estimand": self.estimand,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "mechanism": self.mechanism,
            "coverage": self.coverage,
            "simultaneous": self.simultaneous,
            "anytime": self.anytime,
            "options": options,
        }


def support_floats(spec: SupportRates) -> tuple[float, float]:
    """(q*, p* − q*): the gap as the difference of the two rates rounded to floats."""
    q = float(spec.q_star_exact)
    return q, float(spec.p_star_exact) - q


def support_variance(q: float, gap: float, rest: float, f: Any, n: int, estimand: Estimand) -> Any:
    """Variance of f̂_v from n reports at a true share f (float or array), unvalidated.

    ``q``, ``gap``, ``rest``: q*, p* − q* and 1 − p* − q*, each the correctly rounded exact
    value. ``respondents``: [q*(1−q*) + f(p*−q*)(1−p*−q*)]/(n(p*−q*)²); ``population``
    adds f(1−f)/n.
    """
    var = (q * (1.0 - q) + f * gap * rest) / (n * gap**2)
    if estimand == "population":
        var = var + f * (1.0 - f) / n
    return var


def share_intervals(
    counts: ArrayLike,
    n: int,
    spec: SupportRates,
    confidence: float,
    rate_interval: RateInterval,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each option's own interval for its share f_v, before any widening (unvalidated).

    Each support count is C_v ~ Binomial(n, λ_v) with λ_v = q* + f_v(p* − q*) when the
    participants are i.i.d. (for OLH, up to the 2^−61 bias of q*). The interval for λ_v
    is mapped through f = (λ − q*)/(p* − q*), which is increasing, and clipped to [0, 1];
    so the interval for f_v has exactly the coverage of the one for λ_v (Clopper–Pearson:
    at least nominal for every n and f_v).
    """
    c = np.asarray(counts, dtype=np.float64)
    q, gap = support_floats(spec)
    lam_low, lam_high = rate_interval(c, n, confidence)
    return np.clip((lam_low - q) / gap, 0.0, 1.0), np.clip((lam_high - q) / gap, 0.0, 1.0)


def frequency_arrays(
    counts: ArrayLike,
    n: int,
    spec: SupportRates,
    confidence: float,
    method: str,
    estimand: Estimand,
    *,
    simultaneous: bool = False,
    rate_interval: RateInterval | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Vectorized core of :func:`estimate_frequencies` (unvalidated).

    ``counts`` has the k options on its last axis (one survey, or one row per survey).
    Per option (the default), each share's interval is :func:`share_intervals` at
    ``confidence``. ``simultaneous``: each at confidence 1 − (1 − C)/k, so that all k
    cover at once with probability at least C (Bonferroni); on that event the true shares,
    which sum to 1, also satisfy f_j >= 1 − Σ_{i≠j} U_i and f_j <= 1 − Σ_{i≠j} L_i, so
    each interval is tightened to [max(L_j, 1 − Σ_{i≠j} U_i), min(U_j, 1 − Σ_{i≠j} L_i)]
    and all still cover at once on the same event. Last, every interval is widened to
    contain the projected estimate: a superset of an interval covers at least as often, and
    the estimate shown is never outside its interval (``estimate_raw`` may be).
    ``rate_interval`` (default: the binomial interval ``method``) is the interval for
    each support rate.
    """
    c = np.asarray(counts, dtype=np.float64)
    k = c.shape[-1]
    q, gap = support_floats(spec)
    raw = (c / n - q) / gap
    projected = np.clip(project_to_simplex(raw), 0.0, 1.0)  # rounding can pass 1
    interval = rate_interval if rate_interval is not None else method_interval(method)
    level = 1.0 - (1.0 - confidence) / k if simultaneous else confidence
    low, high = share_intervals(c, n, spec, level, interval)
    if simultaneous:
        others_high = high.sum(axis=-1, keepdims=True) - high
        others_low = low.sum(axis=-1, keepdims=True) - low
        # _SLACK: the sums of the others are rounded; never tighten past the exact bound.
        low, high = (
            np.maximum(low, 1.0 - others_high - _SLACK),
            np.minimum(high, 1.0 - others_low + _SLACK),
        )
    p_exact, q_exact = spec.p_star_exact, spec.q_star_exact
    exact_gap, rest = float(p_exact - q_exact), float(1 - p_exact - q_exact)
    variance = support_variance(q, exact_gap, rest, np.clip(raw, 0.0, 1.0), n, estimand)
    return {
        "estimate": projected,
        "estimate_raw": raw,
        "std_error": np.sqrt(variance),
        "ci_low": np.clip(np.minimum(low, projected), 0.0, 1.0),
        "ci_high": np.clip(np.maximum(high, projected), 0.0, 1.0),
    }


def estimate_frequencies(
    support_counts: ArrayLike,
    n: int,
    spec: SupportRates,
    confidence: float = 0.95,
    estimand: Estimand = "population",
    method: str = "clopper-pearson",
    *,
    simultaneous: bool = False,
    rate_interval: RateInterval | None = None,
) -> FrequencyEstimate:
    """Estimate every option's share from support counts C_v of n reports.

    Args:
        support_counts: length-k counts C_v (GRR: reports per option; OUE: column sums;
            OLH: reports whose hash of v equals their value), each in [0, n].
        n: number of reports, at least 1.
        spec: the mechanism the reports came from.
        confidence: nominal confidence level: of each option's interval, or with
            ``simultaneous`` of all k at once.
        estimand: ``population`` (participants i.i.d. from a population, the default) or
            ``respondents`` (shares among exactly these n people). The interval is the same
            binomial interval for both; the standard error differs by f(1−f)/n.
        method: ``clopper-pearson`` (default; coverage at least nominal), ``wilson``,
            ``wald`` or ``chebyshev``, applied to the support rate C_v/n.
        simultaneous: intervals that cover all k shares at once (Bonferroni, tightened to
            the simplex; see :func:`frequency_arrays`), instead of each its own.
        rate_interval: the interval for each support rate, instead of ``method``'s
            (``method`` then only names it).

    Returns:
        A frozen :class:`FrequencyEstimate` with raw estimates, standard errors, the raw
        estimates projected onto the simplex, and intervals that contain the projected
        estimates.

    Example:
        >>> from deniable.shared.mechanisms import GeneralizedRandomizedResponse
        >>> grr = GeneralizedRandomizedResponse(k=3, alpha=0.5)
        >>> est = estimate_frequencies([10, 5, 5], 20, grr)
        >>> [round(f, 4) for f in est.estimate_raw]
        [0.6667, 0.1667, 0.1667]
    """
    if not isinstance(spec, SupportRates):  # a caller's argument, not a dispatch
        raise TypeError(f"spec must be a frequency oracle, got {type(spec).__name__}")
    count = as_count("n", n, minimum=1)
    counts = _check_counts(support_counts, count, spec)
    level = check_confidence(confidence)
    check_method(method)
    which = check_estimand(estimand)
    arrays = frequency_arrays(
        counts, count, spec, level, method, which,
        simultaneous=simultaneous, rate_interval=rate_interval,
    )  # fmt: skip
    return FrequencyEstimate(
        n=count,
        k=spec.k,
        estimate=tuple(arrays["estimate"].tolist()),
        estimate_raw=tuple(arrays["estimate_raw"].tolist()),
        std_error=tuple(arrays["std_error"].tolist()),
        ci_low=tuple(arrays["ci_low"].tolist()),
        ci_high=tuple(arrays["ci_high"].tolist()),
        support_counts=tuple(counts.tolist()),
        method=method,
        confidence=level,
        estimand=which,
        mechanism=spec.name,
        epsilon=spec.epsilon,
        alpha=float(getattr(spec, "alpha", 0.0)),
        coverage=frequency_coverage(spec.k, simultaneous),
        simultaneous=bool(simultaneous),
    )


def _check_counts(support_counts: ArrayLike, n: int, spec: SupportRates) -> NDArray[np.int64]:
    counts = np.asarray(support_counts)
    if counts.shape != (spec.k,):
        raise ValueError(f"support_counts must have length k={spec.k}, got shape {counts.shape}")
    if counts.dtype.kind not in "iu":
        raise TypeError(f"support_counts must be integers, got dtype {counts.dtype}")
    bad = np.flatnonzero((counts < 0) | (counts > n))
    if bad.size:
        raise ValueError(
            f"support_counts must be in [0, n={n}], got {counts[bad[0]].item()} "
            f"for option {int(bad[0])}"
        )
    if spec.one_option_per_report and int(counts.sum()) != n:
        raise ValueError(
            f"{spec.name} support counts are reports per option and must sum to n={n}, "
            f"got {int(counts.sum())}"
        )
    return counts.astype(np.int64)


def exact_frequency_coverage(
    n: int, share: float, spec: SupportRates, confidence: float, method: str
) -> float:
    """P(option v's own interval contains f), summing the pmf of C_v ~ Binomial(n, λ).

    The interval is :func:`share_intervals`', before it is widened to contain the projected
    estimate (which depends on every count): the shown interval covers at least this often.
    With i.i.d. participants, λ = q* + f(p* − q*) for every frequency oracle (for OLH q* =
    1/g is within 2^−61 of the true value). The pmf is summed where it exceeds 1e-16 in
    either tail.
    """
    from scipy import stats  # imported here: scipy.stats adds ~0.8 s to every CLI start

    q, gap = support_floats(spec)
    lam = q + share * gap
    low = max(int(stats.binom.ppf(_TAIL, n, lam)) - 1, 0)
    high = min(int(stats.binom.isf(_TAIL, n, lam)) + 1, n)
    y = np.arange(low, high + 1)
    ci_low, ci_high = share_intervals(y, n, spec, confidence, method_interval(method))
    covered = (ci_low <= share) & (share <= ci_high)
    return float(np.sum(stats.binom.pmf(y[covered], n, lam)))
