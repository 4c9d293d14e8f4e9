"""Randomized response for yes/no questions: parameters, exact ε and what they mean."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Literal, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._validate import as_count, as_real, check_finite, check_unit_interval

__all__ = ["ESTIMANDS", "Estimand", "RandomizedResponseSpec", "check_estimand"]

Estimand = Literal["population", "respondents"]
ESTIMANDS: dict[str, str] = {
    "population": "population share (participants drawn i.i.d. from a population)",
    "respondents": "share among exactly these n respondents (their answers fixed)",
}


def check_estimand(estimand: object) -> Estimand:
    """Return ``estimand`` if it is a known estimand, else raise naming it."""
    if estimand == "population" or estimand == "respondents":
        return estimand
    raise ValueError(f"unknown estimand {estimand!r}; expected one of: {', '.join(ESTIMANDS)}")


_Spec = TypeVar("_Spec", bound="RandomizedResponseSpec")


def _percent(share: Fraction) -> str:
    """A probability as a whole percentage, rounded exactly; never "100%" for one below 1."""
    whole = round(share * 100)
    return "over 99.5%" if whole == 100 and share < 1 else f"{whole}%"


@dataclass(frozen=True)
class RandomizedResponseSpec:
    """Warner's randomized response with keep-probability α (DESIGN §4.1).

    With probability α the participant reports the true answer, otherwise a fair coin, so the
    report equals the truth with probability (1+α)/2 and the mechanism is ε-LDP with
    ε = ln((1+α)/(1−α)) exactly. α = 1 is representable but offers no privacy (ε = inf).

    Attributes:
        alpha: probability of keeping the true answer, 0 < α <= 1.
    """

    kind: ClassVar[str] = "randomized_response"

    alpha: float
    _epsilon: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        alpha = check_finite("alpha", as_real("alpha", self.alpha))
        if not (0.0 < alpha <= 1.0):
            raise ValueError(
                f"alpha must be in (0, 1], got {alpha!r}"
                + (
                    " (alpha = 0 reports pure noise: nothing can be estimated)"
                    if alpha == 0
                    else ""
                )
            )
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "_epsilon", tightest_epsilon(self.privacy_ratio))

    @classmethod
    def from_epsilon(cls: type[_Spec], epsilon: float) -> _Spec:
        """Return the mechanism with the largest α whose exact ε is at most ``epsilon``.

        α = tanh(ε/2), adjusted by at most a few units in the last place so that the
        mechanism is certified at the requested ε, never above it.
        """
        eps = as_real("epsilon", epsilon)
        if math.isnan(eps) or eps <= 0 or eps == math.inf:
            raise ValueError(
                f"epsilon must be a finite number > 0, got {eps!r}"
                + (" (epsilon = inf means no privacy; use alpha=1 explicitly)" if eps > 0 else "")
            )
        alpha = math.tanh(eps / 2)

        def ratio(a: float) -> Fraction | None:
            return None if a >= 1.0 else (1 + Fraction(a)) / (1 - Fraction(a))

        while alpha > 0 and not exp_at_least(eps, ratio(alpha)):
            alpha = math.nextafter(alpha, 0.0)
        while alpha < 1 and exp_at_least(eps, ratio(math.nextafter(alpha, 1.0))):
            alpha = math.nextafter(alpha, 1.0)
        if alpha <= 0:
            raise ValueError(f"epsilon={eps!r} is too small to represent: alpha would be 0")
        return cls(alpha=alpha)

    @property
    def p_truth(self) -> float:
        """Probability that the report equals the true answer, (1+α)/2."""
        return (1.0 + self.alpha) / 2.0

    @property
    def p_truth_exact(self) -> Fraction:
        """(1+α)/2 as an exact rational; the float α is a dyadic rational, so this is exact."""
        return (1 + Fraction(self.alpha)) / 2

    @property
    def privacy_ratio(self) -> Fraction | None:
        """Worst-case likelihood ratio (1+α)/(1−α) exactly; None when unbounded (α = 1)."""
        if self.alpha >= 1.0:
            return None
        return (1 + Fraction(self.alpha)) / (1 - Fraction(self.alpha))

    @property
    def epsilon(self) -> float:
        """Exact privacy loss ln((1+α)/(1−α)), rounded up to the next float (never understated)."""
        return self._epsilon

    @property
    def epsilon_approx(self) -> float:
        """The seed notes' approximation 2α; it always understates ε. Label it as such."""
        return 2.0 * self.alpha

    @property
    def is_private(self) -> bool:
        """False only for α = 1, where the true answer is always reported."""
        return self.alpha < 1.0

    def certifies(self, epsilon: float) -> bool:
        """Return whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return exp_at_least(as_real("epsilon", epsilon), self.privacy_ratio)

    @overload
    def report_probability(self, p: float) -> float: ...
    @overload
    def report_probability(self, p: NDArray[np.float64]) -> NDArray[np.float64]: ...
    def report_probability(self, p: Any) -> Any:
        """λ = P(report = yes) = αp + (1−α)/2 for a true share p."""
        return self.alpha * p + (1.0 - self.alpha) / 2.0

    @overload
    def debias(self, lam: float) -> float: ...
    @overload
    def debias(self, lam: NDArray[np.float64]) -> NDArray[np.float64]: ...
    def debias(self, lam: Any) -> Any:
        """Invert λ = αp + (1−α)/2: p = (λ − (1−α)/2)/α (unbiased when λ is Y/n)."""
        return (lam - (1.0 - self.alpha) / 2.0) / self.alpha

    def estimator_variance(self, p: float, n: int, estimand: Estimand = "population") -> float:
        """Variance of the unbiased estimate p̂ from n reports when the true share is p.

        ``population``: λ(1−λ)/(α²n); ``respondents``: (1−α²)/(4α²n). They differ by p(1−p)/n.
        """
        count = as_count("n", n, minimum=1)
        share = check_unit_interval("p", p)
        a2 = self.alpha * self.alpha
        if check_estimand(estimand) == "population":
            lam = self.report_probability(share)
            return lam * (1.0 - lam) / (a2 * count)
        return (1.0 - a2) / (4.0 * a2 * count)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        if not self.is_private:
            return (
                "No privacy: your true answer is always sent as it is "
                "(alpha = 1, epsilon = infinity)."
            )
        # From the exact ratio: in floats, (1+α)/2 rounds to 1 for α = 1 − 2^-53, the largest
        # α < 1, whose ratio (1+α)/(1−α) = 2^54 − 1 is finite (ε ≈ 37.4).
        assert self.privacy_ratio is not None
        ratio = float(self.privacy_ratio)
        shown = f"{ratio:.2f}" if ratio < 1e6 else f"{ratio:.3g}"
        return (
            f"The server can guess your true answer right with probability "
            f"{_percent(self.p_truth_exact)}; any report is at most {shown} times as likely "
            f"from one answer as from the other (epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters and privacy figures, with wire-contract field names."""
        return {
            "mechanism": self.kind,
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "epsilon_approx": self.epsilon_approx,
            "p_truth": self.p_truth,
            "private": self.is_private,
        }
