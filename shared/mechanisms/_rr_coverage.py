"""Exact coverage and moments of the yes/no estimator, by summing the report count's pmf."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from deniable.shared._validate import as_count, check_confidence, check_unit_interval
from deniable.shared.mechanisms._proportion import (
    debias,
    keep_rates,
    proportion_arrays,
    report_rate,
)
from deniable.shared.stats import Estimand, check_estimand, check_method

__all__ = ["exact_coverage", "exact_moments", "report_count_pmf"]


def report_count_pmf(
    n: int, p: float, alpha: float, estimand: Estimand = "population"
) -> NDArray[np.float64]:
    """P(Y = y) for y = 0..n, where Y is the number of yes-reports.

    ``population``: Y ~ Binomial(n, λ) with λ = αp + (1−α)/2. ``respondents``: exactly
    p·n respondents say yes (p must be a multiple of 1/n), so Y is the sum of
    Binomial(pn, (1+α)/2) and Binomial(n − pn, (1−α)/2).
    """
    count = as_count("n", n, minimum=1)
    share = check_unit_interval("p", p)
    spec = keep_rates(alpha)
    from scipy import stats  # imported here: scipy.stats adds ~0.8 s to every CLI start

    y = np.arange(count + 1)
    if check_estimand(estimand) == "population":
        return np.asarray(stats.binom.pmf(y, count, report_rate(spec, share)))
    yes = round(share * count)
    if abs(yes - share * count) > 1e-9 * count:
        raise ValueError(f"p must be a multiple of 1/n for respondents, got p={share!r}")
    p_truth = float(spec.p_star_exact)  # (1+α)/2; a report is the truth with it
    from_yes = stats.binom.pmf(np.arange(yes + 1), yes, p_truth)
    from_no = stats.binom.pmf(np.arange(count - yes + 1), count - yes, 1.0 - p_truth)
    return np.asarray(np.convolve(from_yes, from_no))


def exact_coverage(
    n: int,
    p: float,
    alpha: float,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    estimand: Estimand = "population",
) -> float:
    """Probability that the interval from n reports contains the true share p, exactly."""
    pmf = report_count_pmf(n, p, alpha, estimand)
    spec = keep_rates(alpha)
    level = check_confidence(confidence)
    arrays = proportion_arrays(np.arange(n + 1), n, spec, level, check_method(method), estimand)
    covered = (arrays["ci_low"] <= p) & (p <= arrays["ci_high"])
    return float(pmf[covered].sum())


def exact_moments(
    n: int, p: float, alpha: float, estimand: Estimand = "population"
) -> tuple[float, float]:
    """Mean and variance of the unbiased estimate p̂, exactly (no Monte Carlo)."""
    pmf = report_count_pmf(n, p, alpha, estimand)
    raw = debias(keep_rates(alpha), np.arange(n + 1) / n)
    mean = float(pmf @ raw)
    return mean, float(pmf @ (raw - mean) ** 2)
