"""The common part of multiple-choice mechanisms: p*, q*, exact ε, variances, validation."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._rr import Estimand, check_estimand
from deniable.shared._validate import as_count, as_real, check_finite, check_unit_interval

__all__ = [
    "MAX_OPTIONS",
    "CategoricalSpec",
    "alpha_for",
    "check_alpha",
    "check_epsilon",
    "check_options",
    "grr_ratio",
    "most_useful",
    "times",
]

MAX_OPTIONS = 1024
"""Most options a multiple-choice question may have."""


def check_options(k: object) -> int:
    """Return ``k`` if it is an integer number of options in [2, 1024], else raise naming it."""
    count = as_count("k", k)
    if not (2 <= count <= MAX_OPTIONS):
        raise ValueError(f"k must be between 2 and {MAX_OPTIONS} options, got {count}")
    return count


def check_alpha(alpha: object) -> float:
    """Return a keep-probability α in (0, 1] as a float, else raise naming it."""
    value = check_finite("alpha", as_real("alpha", alpha))
    if not (0.0 < value <= 1.0):
        raise ValueError(
            f"alpha must be in (0, 1], got {value!r}"
            + (" (alpha = 0 reports pure noise: nothing can be estimated)" if value == 0 else "")
        )
    return value


def check_epsilon(epsilon: object) -> float:
    """Return a target ε as a finite float > 0, else raise naming it."""
    eps = as_real("epsilon", epsilon)
    if math.isnan(eps) or eps <= 0 or eps == math.inf:
        raise ValueError(f"epsilon must be a finite number > 0, got {eps!r}")
    return eps


def most_useful(
    start: float,
    epsilon: float,
    ratio: Callable[[float], Fraction | None],
    private_end: float,
    useful_end: float,
) -> float:
    """Move ``start`` by ulps to the most useful float whose exact ratio is <= e^epsilon."""
    x = start
    while x != private_end and not exp_at_least(epsilon, ratio(x)):
        x = math.nextafter(x, private_end)
    while x != useful_end and exp_at_least(epsilon, ratio(math.nextafter(x, useful_end))):
        x = math.nextafter(x, useful_end)
    return x


def grr_ratio(alpha: float, size: int) -> Fraction | None:
    """p*/q* = 1 + size·α/(1−α) for randomized response over ``size`` values (α form)."""
    if alpha >= 1.0:
        return None
    a = Fraction(alpha)
    return 1 + size * a / (1 - a)


def alpha_for(epsilon: float, size: int) -> float:
    """α = (e^ε − 1)/(e^ε + size − 1), written with e^−ε so that it never overflows."""
    tiny = math.exp(-epsilon)
    return -math.expm1(-epsilon) / (1.0 + (size - 1) * tiny)


def times(ratio: float) -> str:
    """Format a likelihood ratio for a sentence: two decimals, or 3 significant digits."""
    return f"{ratio:.2f}" if ratio < 1000 else f"{ratio:.3g}"


@dataclass(frozen=True)
class CategoricalSpec(ABC):
    """A pure frequency oracle for one of k options (DESIGN §4.2), validated at construction.

    p* = P(report supports v | true option v), q* = P(report supports v | true option ≠ v).
    From n reports of which C_v support v, f̂_v = (C_v/n − q*)/(p* − q*) is unbiased.

    Attributes:
        k: number of options, 2 <= k <= 1024; options are numbered 0..k−1.
    """

    kind: ClassVar[str]

    k: int
    _epsilon: float = field(init=False, repr=False, compare=False)
    _p: float = field(init=False, repr=False, compare=False)
    _q: float = field(init=False, repr=False, compare=False)
    _gap: float = field(init=False, repr=False, compare=False)
    _rest: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_options(self.k))
        self._check_parameters()
        p, q = self.p_star_exact, self.q_star_exact
        object.__setattr__(self, "_epsilon", tightest_epsilon(self.privacy_ratio))
        object.__setattr__(self, "_p", float(p))
        object.__setattr__(self, "_q", float(q))
        object.__setattr__(self, "_gap", float(p - q))
        object.__setattr__(self, "_rest", float(1 - p - q))

    @abstractmethod
    def _check_parameters(self) -> None:
        """Validate and normalize the mechanism's own parameters."""

    @property
    @abstractmethod
    def p_star_exact(self) -> Fraction:
        """p* as an exact rational (the float parameters are dyadic rationals)."""

    @property
    @abstractmethod
    def q_star_exact(self) -> Fraction:
        """q* as an exact rational."""

    @property
    @abstractmethod
    def privacy_ratio(self) -> Fraction | None:
        """Worst-case likelihood ratio of a report, exactly; None when unbounded."""

    @abstractmethod
    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""

    @abstractmethod
    def _parameters(self) -> dict[str, Any]:
        """The mechanism's own parameters, for :meth:`describe`."""

    @property
    def p_star(self) -> float:
        """P(report supports v | true option is v)."""
        return self._p

    @property
    def q_star(self) -> float:
        """P(report supports v | true option is another one)."""
        return self._q

    @property
    def epsilon(self) -> float:
        """Exact privacy loss ln(privacy_ratio), rounded up to a float (never understated)."""
        return self._epsilon

    @property
    def is_private(self) -> bool:
        """False only when the privacy ratio is unbounded (ε = inf)."""
        return self.privacy_ratio is not None

    def certifies(self, epsilon: float) -> bool:
        """Return whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return exp_at_least(as_real("epsilon", epsilon), self.privacy_ratio)

    def variance_unchecked(self, f: Any, n: int, estimand: Estimand) -> Any:
        """:meth:`variance` without validation; ``f`` may be a float or a numpy array."""
        var = (self._q * (1.0 - self._q) + f * self._gap * self._rest) / (n * self._gap**2)
        if estimand == "population":
            var = var + f * (1.0 - f) / n
        return var

    def variance(self, f: float, n: int, estimand: Estimand = "population") -> float:
        """Variance of f̂_v from n reports when option v's true share is f.

        ``respondents`` (these n answers fixed):
        [q*(1−q*) + f(p*−q*)(1−p*−q*)]/(n(p*−q*)²); ``population`` (participants i.i.d.)
        adds f(1−f)/n.
        """
        share = check_unit_interval("f", f)
        count = as_count("n", n, minimum=1)
        return float(self.variance_unchecked(share, count, check_estimand(estimand)))

    def small_f_variance(self, n: int) -> float:
        """Variance at f = 0, q*(1−q*)/(n(p*−q*)²): the n·Var column of DESIGN §4.2 over n."""
        return self.variance(0.0, n, "respondents")

    def worst_variance(self, n: int, estimand: Estimand = "population") -> float:
        """Largest :meth:`variance` over all true shares f in [0, 1] (for sample sizes).

        The variance is linear (respondents) or concave quadratic (population) in f, so the
        maximum is at f = 0, f = 1 or the vertex f = (1 + (1−p*−q*)/(p*−q*))/2.
        """
        count = as_count("n", n, minimum=1)
        which = check_estimand(estimand)
        vertex = min(max((1.0 + self._rest / self._gap) / 2.0, 0.0), 1.0)
        return max(float(self.variance_unchecked(f, count, which)) for f in (0.0, 1.0, vertex))

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters and privacy figures as a JSON-ready dict."""
        return {
            "mechanism": self.kind,
            "k": self.k,
            **self._parameters(),
            "epsilon": self.epsilon,
            "p_star": self.p_star,
            "q_star": self.q_star,
            "private": self.is_private,
        }
