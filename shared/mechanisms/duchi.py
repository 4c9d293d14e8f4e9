"""Duchi, Jordan and Wainwright's mechanism: report ±B with odds leaning toward the answer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._validate import as_real, check_finite
from deniable.shared.mechanisms._mean import MeanTally
from deniable.shared.mechanisms._mean_intervals import MeanInterval, two_point_interval
from deniable.shared.mechanisms._numeric import NumericMechanism, check_epsilon
from deniable.shared.sampling import ByteSource, bernoulli_rational
from deniable.shared.stats._sequences import BennettBound

__all__ = ["DuchiMechanism"]


def _duchi_ratio(bound: float) -> Fraction | None:
    if bound <= 1.0:
        return None
    b = Fraction(bound)
    return (b + 1) / (b - 1)


@dataclass(frozen=True)
class DuchiMechanism(NumericMechanism):
    """Duchi, Jordan and Wainwright's mechanism: report ±B, exactly unbiased.

    P(y = +B | t) = ½ + t/(2B) exactly (an exact rational Bernoulli of the input, no input
    rounding needed), so E[y | t] = t and Var(y | t) = B² − t². The probability ranges
    over [(B−1)/(2B), (B+1)/(2B)], so the worst ratio is (B+1)/(B−1) (t = ±1), and
    ε = ln((B+1)/(B−1)) exactly, rounded up to a float. B is a float, so both reports are
    exact floats; the continuous B = (e^ε+1)/(e^ε−1) is rounded up (more private).

    Attributes:
        lo: lower end of the public range.
        hi: upper end of the public range.
        bound: B > 1, the magnitude of every report.
    """

    name: ClassVar[str] = "duchi"
    title: ClassVar[str] = "Duchi et al.: one of two values"

    bound: float
    epsilon: float = field(init=False, compare=False)
    _ratio: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        bound = check_finite("bound", as_real("bound", self.bound))
        ratio = _duchi_ratio(bound)
        if ratio is None:
            raise ValueError(f"bound must be > 1, got {bound!r}")
        object.__setattr__(self, "bound", bound)
        object.__setattr__(self, "_ratio", ratio)
        object.__setattr__(self, "epsilon", tightest_epsilon(ratio))

    @classmethod
    def from_epsilon(cls, lo: float, hi: float, epsilon: float) -> DuchiMechanism:
        """The smallest float B whose exact ε is at most ``epsilon``.

        Example:
            >>> spec = DuchiMechanism.from_epsilon(0.0, 1.0, 1.0)
            >>> spec.certifies(1.0), round(spec.worst_variance, 3)
            (True, 4.683)
        """
        eps = check_epsilon(epsilon)
        bound = max(1.0, 1.0 / math.tanh(eps / 2))

        def ok(b: float) -> bool:
            ratio = _duchi_ratio(b)
            return ratio is not None and exp_at_least(eps, ratio)

        while not ok(bound):
            bound = math.nextafter(bound, math.inf)
        while ok(math.nextafter(bound, 1.0)):
            bound = math.nextafter(bound, 1.0)
        return cls(lo, hi, bound=bound)

    @property
    def privacy_ratio(self) -> Fraction:
        """(B+1)/(B−1) exactly: the worst-case likelihood ratio."""
        return self._ratio

    @property
    def p_max_exact(self) -> Fraction:
        """P(y = +B | t = 1) = (B+1)/(2B)."""
        return (Fraction(self.bound) + 1) / (2 * Fraction(self.bound))

    @property
    def grid_step(self) -> float:
        """Distance 2B between the two reports."""
        return 2.0 * self.bound

    @property
    def unit_bits(self) -> int:
        """Both reports are integer multiples of 2^-G, G the fraction bits of B."""
        return Fraction(self.bound).denominator.bit_length() - 1

    def certifies(self, epsilon: float) -> bool:
        """Return whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return self._certifies_ratio(epsilon, self._ratio)

    def variance(self, t: float) -> float:
        """Var(y | t) = B² − t²."""
        value = Fraction(as_real("t", t))
        if not -1 <= value <= 1:
            raise ValueError(f"t must be in [-1, 1], got {t!r}")
        return float(Fraction(self.bound) ** 2 - value * value)

    @property
    def worst_variance(self) -> float:
        """B², at t = 0; → ((e^ε+1)/(e^ε−1))²."""
        return float(Fraction(self.bound) ** 2)

    @property
    def worst_second_moment(self) -> float:
        """E[y² | t] = B² for every t."""
        return self.worst_variance

    @property
    def report_bound(self) -> float:
        """B: every report is ±B."""
        return self.bound

    def mean_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """Clopper–Pearson for the share of +B reports, mapped to μ: exact, for every n.

        The count of +B reports is Binomial(n, (1 + μ/B)/2) for participants drawn from
        any population, so no t-interval is needed (the t-interval under-covers here: 0.82
        at ε = 3, n = 50, and has no width when every report agrees).
        """
        return two_point_interval(tally.n, tally.mean, self.bound, confidence)

    def anytime_bound(self) -> BennettBound:
        """Bennett: Var(y) <= B², |y − μ| <= B + 1 (unused: see :meth:`anytime_mean_interval`)."""
        return BennettBound(self.worst_second_moment, self.bound + 1.0)

    @property
    def anytime_method(self) -> str:
        """The beta-binomial mixture: Duchi's reports are Bernoulli."""
        from deniable.shared.stats import RATE_METHOD

        return RATE_METHOD

    def anytime_mean_interval(
        self, n: ArrayLike, mean: ArrayLike, confidence: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The beta-binomial CS for the rate λ of +B reports, mapped by μ = B(2λ − 1).

        Every report is ±B, so the count of +B reports, K = n(1 + ȳ/B)/2, is known from
        the tally and the reports are Bernoulli(λ): the exact likelihood-ratio mixture
        applies (:func:`deniable.shared.stats.anytime_rate_interval`).
        """
        from deniable.shared.stats import anytime_rate_interval

        count = np.asarray(n, dtype=np.float64)
        up = np.rint(count * (1.0 + np.asarray(mean, dtype=np.float64) / self.bound) / 2.0)
        low, high = anytime_rate_interval(up, count, confidence)
        return self.bound * (2.0 * low - 1.0), self.bound * (2.0 * high - 1.0)

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether y is +B or −B exactly."""
        return np.asarray((y == self.bound) | (y == -self.bound))

    def tally(self, reports: Any) -> list[int]:
        """[Σz, Σz²] from two counts, every report being ±B (z = ±B·2^unit_bits)."""
        y = np.asarray(reports, dtype=np.float64)
        up = int(np.count_nonzero(y == self.bound))
        down = int(np.count_nonzero(y == -self.bound))
        if up + down < y.size:  # reports not checked yet: sum them one by one
            return super().tally(reports)
        z = int(Fraction(self.bound) * (1 << self.unit_bits))
        return [(up - down) * z, (up + down) * z * z]

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        share = float(self.p_max_exact)
        return (
            f"Only a coin-like signal is sent: 'high' with a probability between "
            f"{1 - share:.0%} (answer {self.lo:g}) and {share:.0%} (answer {self.hi:g}), so any "
            f"report is at most {float(self._ratio):.2f} times as likely for one answer as for "
            f"any other (epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters, exact ε and reports, JSON-ready."""
        return {
            **self._describe_range(),
            "epsilon": self.epsilon,
            "bound": self.bound,
            "p_max": float(self.p_max_exact),
            "worst_variance": self.worst_variance,
        }

    def _sample(self, numerators: list[int], denominator: int, source: ByteSource) -> Any:
        """+B with probability 1/2 + t/(2B) = (B + 2u − 1)/(2B), exactly; else −B."""
        # With u = n/den and B = b/2^G: P(+B) = (b·den + 2^G(2n − den))/(2b·den).
        b, scale = Fraction(self.bound).as_integer_ratio()
        positive = bernoulli_rational(
            [b * denominator + scale * (2 * n - denominator) for n in numerators],
            2 * b * denominator,
            source,
            fixed_reads=True,  # the probabilities come from the true values
        )
        return np.where(positive, self.bound, -self.bound)
