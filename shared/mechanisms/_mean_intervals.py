"""Intervals for the mean report (normalized scale): t, Clopper–Pearson, Bernstein, Chernoff."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "T_CONFIDENCE_CHECKED",
    "MeanInterval",
    "bernstein_interval",
    "chernoff_half_width",
    "clopper_pearson_mean",
    "discrete_laplace_log_mgf",
    "percent",
    "t_interval",
    "theorem",
    "two_point_interval",
]

T_CONFIDENCE_CHECKED = 0.95
"""The t-interval is used only at confidence levels up to this one, where it was simulated."""


@dataclass(frozen=True)
class MeanInterval:
    """An interval for the mean report μ on the normalized [−1, 1] scale.

    Attributes:
        low: lower end (may lie outside [−1, 1]; the caller clips).
        high: upper end.
        method: the construction's name (``t``, ``clopper-pearson``, ``bernstein``, ...).
        coverage: what it promises, in words.
    """

    low: float
    high: float
    method: str
    coverage: str


def percent(level: float) -> str:
    """``level`` as a percentage without spurious digits: 0.95 -> '95%', 0.999 -> '99.9%'."""
    return f"{level * 100:.10g}%"


def theorem(level: float, how: str) -> str:
    """The coverage sentence of an interval that holds for every population by a theorem."""
    return f"fixed n; at least {percent(level)} for every population (theorem: {how})"


def t_interval(n: int, mean: Fraction, variance: Fraction, level: float) -> tuple[float, float]:
    """ȳ ± t_{n−1}·s/√n for n >= 2 reports (half-width inf if beyond the float range)."""
    from scipy import stats  # imported here: scipy.stats adds ~0.8 s to every CLI start

    try:
        se = math.sqrt(float(variance) / n)
    except OverflowError:
        se = math.inf
    # The upper tail (1 − c)/2 is exact, so the quantile is finite for every c < 1
    # (t.ppf((1 + c)/2) is inf once (1 + c)/2 rounds to 1).
    half = float(stats.t.isf((1.0 - level) / 2.0, n - 1)) * se
    centre = float(mean) if abs(mean) < 2**1000 else math.copysign(math.inf, mean)
    return centre - half, centre + half


def clopper_pearson_mean(n: int, ups: int, bound: float, level: float) -> tuple[float, float]:
    """Exact interval for μ from ``ups`` reports of +B among n reports that are each ±B.

    Each report is +B with probability λ = (1 + μ/B)/2 (averaged over the population),
    independently, so the count is Binomial(n, λ) exactly; the Clopper–Pearson interval
    for λ (Clopper and Pearson 1934), mapped through μ = B(2λ − 1), covers μ with
    probability at least ``level`` for every n and μ.
    """
    from scipy import special  # imported here, as in deniable.shared.stats

    tail = (1.0 - level) / 2.0
    low = float(special.betaincinv(ups, n - ups + 1, tail)) if ups > 0 else 0.0
    # The upper end by symmetry, from the lower tail: 1 − tail rounds to 1 near c = 1.
    high = 1.0 - float(special.betaincinv(n - ups, ups + 1, tail)) if ups < n else 1.0
    return bound * (2.0 * low - 1.0), bound * (2.0 * high - 1.0)


def two_point_interval(n: int, mean: Fraction, bound: float, level: float) -> MeanInterval:
    """The Clopper–Pearson interval for μ from n reports that are each +B or −B, mean ȳ.

    The count of +B reports is n(ȳ/B + 1)/2 exactly.

    Raises:
        ValueError: that count is not an integer in [0, n] (not a tally of ±B reports).
    """
    ups = n * (mean / Fraction(bound) + 1) / 2
    if ups.denominator != 1 or not 0 <= ups <= n:
        raise ValueError(
            f"not a tally of +-{bound!r} reports: n={n}, mean={float(mean)!r} gives "
            f"{float(ups)!r} reports of +B"
        )
    low, high = clopper_pearson_mean(n, int(ups), bound, level)
    how = "Clopper-Pearson exact binomial interval for the share of +B reports"
    return MeanInterval(low, high, "clopper-pearson", theorem(level, how))


def _bernstein_deviation(n: int, variance: float, step: float, log_term: float) -> float:
    """U with exp(−n u²/(2σ² + 2bu/3)) = e^{−log_term}: Bernstein's one-sided deviation."""
    linear = step * log_term / 3.0
    return (linear + math.sqrt(linear * linear + 2.0 * variance * log_term * n)) / n


def bernstein_interval(
    n: int, mean: float, bound: float, second_moment: float, level: float
) -> tuple[float, float] | None:
    """Reports in [−C, C] with E[y²] <= M: the set of μ that Bernstein's inequality keeps.

    For a population mean μ, the reports' variance is at most M − μ² and y − μ lies in
    [−C − μ, C − μ], so Bernstein's inequality bounds each tail of ȳ − μ by (1 − c)/2 at
    the deviation u±(μ) of :func:`_bernstein_deviation`. The interval is every μ in
    [−1, 1] with −u−(μ) < ȳ − μ < u+(μ): it contains the true μ with probability at least
    c, whatever the population. Both u± are concave in μ, so the set is an interval; its
    ends are found by bisection from a point inside. None when no μ qualifies (an event of
    probability below 1 − c).
    """
    log_term = math.log(2.0 / (1.0 - level))

    def excess(mu: float) -> float:
        variance = max(second_moment - mu * mu, 0.0)
        above = mean - mu - _bernstein_deviation(n, variance, bound - mu, log_term)
        below = mu - mean - _bernstein_deviation(n, variance, bound + mu, log_term)
        return max(above, below)  # convex in mu; <= 0 inside the interval

    inside = min(max(mean, -1.0), 1.0)
    if excess(inside) > 0:
        inside = _golden_minimum(excess, -1.0, 1.0)
        if excess(inside) > 0:
            return None
    low = -1.0 if excess(-1.0) <= 0 else _boundary(excess, -1.0, inside)
    high = 1.0 if excess(1.0) <= 0 else _boundary(excess, 1.0, inside)
    return low, high


def _boundary(excess: Callable[[float], float], outside: float, inside: float) -> float:
    """The last point from ``inside`` toward ``outside`` where ``excess`` <= 0, outward-rounded."""
    for _ in range(200):
        middle = (outside + inside) / 2.0
        if middle in (outside, inside):
            break
        if excess(middle) <= 0:
            inside = middle
        else:
            outside = middle
    return outside  # the outer end of the bracket: never inside the true boundary


def _golden_minimum(function: Callable[[float], float], low: float, high: float) -> float:
    """Minimizer of a convex ``function`` on [low, high] by golden-section search."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = low, high
    for _ in range(200):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if function(c) <= function(d):
            b = d
        else:
            a = c
        if b - a <= 1e-15:
            break
    return (a + b) / 2.0


def discrete_laplace_log_mgf(decay: float, argument: float) -> float:
    """Ln E[e^{sZ}] for P(Z = z) ∝ e^{−a|z|} (a = ``decay``), |s| < a (``argument`` = s).

    E[e^{sZ}] = (1 − q)² / ((1 − q e^s)(1 − q e^{−s})) with q = e^{−a}; written with
    expm1/log so that it stays accurate when a is tiny.
    """
    one_minus_q = -math.expm1(-decay)
    return (
        2.0 * math.log(one_minus_q)
        - math.log(-math.expm1(argument - decay))
        - math.log(-math.expm1(-argument - decay))
    )


def chernoff_half_width(
    n: int, log_mgf: Callable[[float], float], limit: float, level: float
) -> float:
    """Half-width u of ȳ ± u when each report is μ + (a [−1, 1]-bounded part) + known noise.

    ``log_mgf(λ)`` bounds ln E[e^{λ(y − μ)}] for 0 < λ < ``limit`` (Hoeffding's lemma for
    the bounded part, λ²/2, plus the noise's exact log-MGF); it is symmetric in λ. By
    Chernoff's bound each tail of ȳ − μ beyond u has probability at most
    exp(−n(λu − log_mgf(λ))) for every such λ; u = min over λ of (log_mgf(λ) + ln(2/(1−c))/n)/λ
    makes it (1 − c)/2. Any λ gives a valid u, so the numerical minimization can only
    cost width, never coverage.
    """
    from scipy import optimize  # imported here, as scipy elsewhere

    log_term = math.log(2.0 / (1.0 - level)) / n

    def width(rate: float) -> float:
        return (log_mgf(rate) + log_term) / rate

    found = optimize.minimize_scalar(
        width, bounds=(limit * 1e-9, limit * (1.0 - 1e-9)), method="bounded",
        options={"xatol": limit * 1e-10},
    )  # fmt: skip
    return float(width(float(found.x)))
