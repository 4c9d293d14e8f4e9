"""Debiased option frequencies with confidence intervals, and their projection onto the simplex."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.aggregator.analysis._intervals import binomial_interval, check_method
from deniable.shared import Estimand, check_estimand
from deniable.shared._categorical import GrrSpec
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._validate import as_count, check_confidence

__all__ = [
    "FrequencyEstimate",
    "estimate_frequencies",
    "frequency_arrays",
    "project_to_simplex",
]


def project_to_simplex(values: ArrayLike) -> NDArray[np.float64]:
    """Euclidean projection onto the probability simplex along the last axis (DESIGN §4.2).

    Sort u = values in decreasing order; ρ is the largest j with
    u_j − (Σ_{i<=j} u_i − 1)/j > 0, θ = (Σ_{i<=ρ} u_i − 1)/ρ and the projection is
    max(values − θ, 0): the closest point with non-negative entries summing to 1.

    Example:
        >>> project_to_simplex([0.6, 0.6, -0.2]).tolist()
        [0.5, 0.5, 0.0]
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"values must have at least one entry on the last axis, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite")
    k = x.shape[-1]
    u = -np.sort(-x, axis=-1)
    excess = np.cumsum(u, axis=-1) - 1.0
    ranks = np.arange(1, k + 1, dtype=np.float64)
    positive = u - excess / ranks > 0  # true at j = 1, and on a prefix of the ranks
    rho = k - np.argmax(positive[..., ::-1], axis=-1)
    theta = np.take_along_axis(excess, (rho - 1)[..., None], axis=-1) / rho[..., None]
    projected: NDArray[np.float64] = np.maximum(x - theta, 0.0)
    return projected


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated share of each option from n multiple-choice reports.

    Tuples hold one entry per option 0..k−1.

    Attributes:
        n: number of reports.
        k: number of options.
        estimate: ``estimate_raw`` projected onto the simplex (non-negative, sums to 1).
        estimate_raw: unbiased f̂_v = (C_v/n − q*)/(p* − q*); may fall outside [0, 1].
        std_error: estimated standard error of each raw estimate for the estimand.
        ci_low: lower confidence bound for each share (per option, not simultaneous).
        ci_high: upper confidence bound for each share.
        support_counts: C_v, the number of reports that support option v.
        method: interval method (see ``aggregator.METHODS``).
        confidence: nominal confidence level of each interval.
        estimand: what the intervals cover (see ``shared.ESTIMANDS``).
        mechanism: ``grr``, ``oue`` or ``olh``.
        epsilon: the mechanism's exact ε.
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

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples become lists)."""
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in asdict(self).items()
        }


def frequency_arrays(
    counts: ArrayLike,
    n: int,
    spec: CategoricalSpec,
    confidence: float,
    method: str,
    estimand: Estimand,
) -> dict[str, NDArray[np.float64]]:
    """Vectorized core of :func:`estimate_frequencies`, one entry per count (unvalidated).

    Each support count is C_v ~ Binomial(n, λ_v) with λ_v = q* + f_v(p* − q*) when the
    participants are i.i.d. (for OLH, up to the 2^−61 bias of q*). The binomial interval
    for λ_v is mapped through f = (λ − q*)/(p* − q*), which is increasing, and clipped to
    [0, 1]; so the interval for f_v has exactly the coverage of the one for λ_v
    (Clopper–Pearson: at least nominal for every n and f_v).
    """
    c = np.asarray(counts, dtype=np.float64)
    q, gap = spec.q_star, spec.p_star - spec.q_star
    raw = (c / n - q) / gap
    lam_low, lam_high = binomial_interval(c, n, confidence, method)
    variance = spec.variance_unchecked(np.clip(raw, 0.0, 1.0), n, estimand)
    return {
        "estimate_raw": raw,
        "std_error": np.sqrt(variance),
        "ci_low": np.clip((lam_low - q) / gap, 0.0, 1.0),
        "ci_high": np.clip((lam_high - q) / gap, 0.0, 1.0),
    }


def estimate_frequencies(
    support_counts: ArrayLike,
    n: int,
    spec: CategoricalSpec,
    confidence: float = 0.95,
    estimand: Estimand = "population",
    method: str = "clopper-pearson",
) -> FrequencyEstimate:
    """Estimate every option's share from support counts C_v of n reports.

    Args:
        support_counts: length-k counts C_v (GRR: reports per option; OUE: column sums;
            OLH: reports whose hash of v equals their value), each in [0, n].
        n: number of reports, at least 1.
        spec: the mechanism the reports came from.
        confidence: nominal confidence level of each per-option interval.
        estimand: ``population`` (participants i.i.d. from a population, the default) or
            ``respondents`` (shares among exactly these n people). The interval is the same
            binomial interval for both; the standard error differs by f(1−f)/n.
        method: ``clopper-pearson`` (default; coverage at least nominal), ``wilson``,
            ``wald`` or ``chebyshev``, applied to the support rate C_v/n.

    Returns:
        A frozen :class:`FrequencyEstimate` with raw estimates, standard errors and intervals,
        and the raw estimates projected onto the simplex.

    Example:
        >>> est = estimate_frequencies([10, 5, 5], 20, GrrSpec(k=3, alpha=0.5))
        >>> [round(f, 4) for f in est.estimate_raw]
        [0.6667, 0.1667, 0.1667]
    """
    if not isinstance(spec, CategoricalSpec):
        raise TypeError(f"spec must be a categorical spec, got {type(spec).__name__}")
    count = as_count("n", n, minimum=1)
    counts = _check_counts(support_counts, count, spec)
    level = check_confidence(confidence)
    check_method(method)
    which = check_estimand(estimand)
    arrays = frequency_arrays(counts, count, spec, level, method, which)
    return FrequencyEstimate(
        n=count,
        k=spec.k,
        estimate=tuple(project_to_simplex(arrays["estimate_raw"]).tolist()),
        **{name: tuple(values.tolist()) for name, values in arrays.items()},
        support_counts=tuple(counts.tolist()),
        method=method,
        confidence=level,
        estimand=which,
        mechanism=spec.kind,
        epsilon=spec.epsilon,
    )


def _check_counts(support_counts: ArrayLike, n: int, spec: CategoricalSpec) -> NDArray[np.int64]:
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
    if isinstance(spec, GrrSpec) and int(counts.sum()) != n:
        raise ValueError(
            f"GRR support counts are reports per option and must sum to n={n}, "
            f"got {int(counts.sum())}"
        )
    return counts.astype(np.int64)
