"""Binomial confidence intervals for the report rate λ, vectorized over counts."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._validate import MAX_CONFIDENCE

__all__ = [
    "MAX_CONFIDENCE",
    "METHODS",
    "binomial_interval",
    "check_method",
    "normal_quantile",
]


METHODS: dict[str, str] = {
    "clopper-pearson": "Clopper-Pearson exact binomial interval for the report rate, mapped "
    "affinely to the true share; coverage >= nominal for every n and share",
    "wilson": "Wilson score interval for the report rate, mapped affinely to the true share; "
    "narrower, coverage can dip below nominal for small n",
    "wald": "Wald (normal approximation) interval for the report rate, mapped affinely to the "
    "true share; can fall well short of nominal coverage for small n or extreme shares",
    "chebyshev": "Chebyshev bound with Var(report) <= 1/4 (the classroom bound): "
    "half-width 1/(2 alpha sqrt(n (1 - confidence))); always valid, very wide",
}


def check_method(method: object) -> str:
    """Return ``method`` if it names a known interval method, else raise naming it."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of: {', '.join(METHODS)}")
    return method


def normal_quantile(confidence: float) -> float:
    """Two-sided standard normal quantile z with P(|Z| <= z) = confidence."""
    from scipy import special  # imported here: scipy.special adds ~0.3 s to every CLI start

    return float(special.ndtri(0.5 + confidence / 2.0))


def binomial_interval(
    ones: ArrayLike, n: int, confidence: float, method: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-sided interval for λ from Y ~ Binomial(n, λ), one per entry of ``ones``.

    The bounds are clipped to [0, 1], λ's parameter space.
    """
    y = np.asarray(ones, dtype=np.float64)
    tail = (1.0 - confidence) / 2.0
    rate = y / n
    if method == "clopper-pearson":
        from scipy import special  # imported here, as in normal_quantile

        with np.errstate(invalid="ignore", divide="ignore"):
            low = np.where(y > 0, special.betaincinv(np.maximum(y, 1), n - y + 1, tail), 0.0)
            high = np.where(y < n, special.betaincinv(y + 1, np.maximum(n - y, 1), 1.0 - tail), 1.0)
    elif method == "wilson":
        z = normal_quantile(confidence)
        z2 = z * z
        center = (y + z2 / 2.0) / (n + z2)
        half = z / (n + z2) * np.sqrt(y * (n - y) / n + z2 / 4.0)
        low, high = center - half, center + half
    elif method == "wald":
        half = normal_quantile(confidence) * np.sqrt(rate * (1.0 - rate) / n)
        low, high = rate - half, rate + half
    elif method == "chebyshev":
        half = 1.0 / (2.0 * np.sqrt(n * (1.0 - confidence)))
        low, high = rate - half, rate + half
    else:
        check_method(method)
        raise AssertionError("unreachable")  # pragma: no cover
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
