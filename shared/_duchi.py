"""Duchi's ±B mechanism and the Hybrid that mixes it with Piecewise (ICDE 2019), exactly."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._numeric_base import NumericBase, check_epsilon
from deniable.shared._piecewise import PiecewiseSpec, rounding_term
from deniable.shared._validate import as_real, check_finite

__all__ = ["HYBRID_THRESHOLD", "DuchiSpec", "HybridSpec"]

HYBRID_THRESHOLD = 0.61
"""Above this ε the Hybrid mechanism mixes in Piecewise (Wang et al., ICDE 2019)."""

_Duchi = TypeVar("_Duchi", bound="DuchiSpec")
_Hybrid = TypeVar("_Hybrid", bound="HybridSpec")


def _duchi_ratio(bound: float) -> Fraction | None:
    if bound <= 1.0:
        return None
    b = Fraction(bound)
    return (b + 1) / (b - 1)


@dataclass(frozen=True)
class DuchiSpec(NumericBase):
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

    kind = "duchi"

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
    def from_epsilon(cls: type[_Duchi], lo: float, hi: float, epsilon: float) -> _Duchi:
        """The smallest float B whose exact ε is at most ``epsilon``.

        Example:
            >>> spec = DuchiSpec.from_epsilon(0.0, 1.0, 1.0)
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

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether y is +B or −B exactly."""
        return np.asarray((y == self.bound) | (y == -self.bound))

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


@dataclass(frozen=True)
class HybridSpec(NumericBase):
    """Hybrid mechanism (Wang et al., ICDE 2019): Piecewise with probability β, else Duchi.

    An exact Bernoulli(β) (β a float, hence dyadic) picks the part; both parts run at the
    same ε and are unbiased, so E[y | t] = t and Var(y | t) = β·Var_PM + (1−β)·Var_D. Their
    outputs must not overlap (B off the Piecewise grid), so each report's probability is
    one part's times β or 1−β and the worst ratio is the larger of the parts' (of the part
    used, when β is 0 or 1). ``from_epsilon`` takes β = 1 − e^(−ε/2) when ε > 0.61, else
    β = 0 (pure Duchi), which makes the continuous variance constant in t.

    Attributes:
        lo: lower end of the public range.
        hi: upper end of the public range.
        beta: probability of the Piecewise part, in [0, 1].
        bound: the Duchi part's B.
        center_cells: the Piecewise part's W.
        outer_cells: the Piecewise part's L.
        grid_bits: the Piecewise part's g.
    """

    kind = "hybrid"

    beta: float
    bound: float
    center_cells: int
    outer_cells: int
    grid_bits: int
    epsilon: float = field(init=False, compare=False)
    piecewise: PiecewiseSpec = field(init=False, repr=False, compare=False)
    duchi: DuchiSpec = field(init=False, repr=False, compare=False)
    _ratio: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        beta = as_real("beta", self.beta)
        if not 0.0 <= beta <= 1.0:  # also rejects NaN
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        object.__setattr__(self, "beta", beta)
        pm = PiecewiseSpec(self.lo, self.hi, self.center_cells, self.outer_cells, self.grid_bits)
        duchi = DuchiSpec(self.lo, self.hi, self.bound)
        if 0.0 < beta < 1.0 and pm.report_valid(np.array([duchi.bound])).any():
            raise ValueError(
                f"bound {duchi.bound!r} lies on the piecewise grid: reports would be ambiguous"
            )
        for name in ("bound", "center_cells", "outer_cells", "grid_bits"):
            object.__setattr__(self, name, getattr(pm if name != "bound" else duchi, name))
        object.__setattr__(self, "piecewise", pm)
        object.__setattr__(self, "duchi", duchi)
        used = [r for r, w in ((pm.privacy_ratio, beta), (duchi.privacy_ratio, 1 - beta)) if w]
        ratio = max(used)
        object.__setattr__(self, "_ratio", ratio)
        object.__setattr__(self, "epsilon", tightest_epsilon(ratio))

    @classmethod
    def from_epsilon(cls: type[_Hybrid], lo: float, hi: float, epsilon: float) -> _Hybrid:
        """Both parts certified at ``epsilon``; β = 1 − e^(−ε/2) above ε = 0.61, else 0.

        Example:
            >>> spec = HybridSpec.from_epsilon(0.0, 1.0, 1.0)
            >>> spec.certifies(1.0), round(spec.worst_variance, 3)
            (True, 4.289)
        """
        eps = check_epsilon(epsilon)
        pm = PiecewiseSpec.from_epsilon(lo, hi, eps)
        bound = DuchiSpec.from_epsilon(lo, hi, eps).bound
        while pm.report_valid(np.array([bound])).any():
            bound = math.nextafter(bound, math.inf)  # larger B: still certified, off the grid
        beta = -math.expm1(-eps / 2) if eps > HYBRID_THRESHOLD else 0.0
        return cls(lo, hi, beta, bound, pm.center_cells, pm.outer_cells, pm.grid_bits)

    @property
    def privacy_ratio(self) -> Fraction:
        """The larger worst-case ratio of the parts in use, exactly."""
        return self._ratio

    @property
    def unit_bits(self) -> int:
        """Reports of both parts are integer multiples of 2^-G."""
        return max(self.piecewise.unit_bits, self.duchi.unit_bits)

    @property
    def grid_step(self) -> float:
        """The Piecewise part's grid step (the Duchi part adds the two points ±B)."""
        return self.piecewise.grid_step

    def certifies(self, epsilon: float) -> bool:
        """Return whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return self._certifies_ratio(epsilon, self._ratio)

    def _mix(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(β, c, κ, bump): Var(y | t) = c + κt² + bump·f(1−f)."""
        beta, pm = Fraction(self.beta), self.piecewise
        h, outer = pm.half_step, pm.outer_cells
        square = Fraction(self.bound) ** 2
        constant = beta * pm.variance_constant + (1 - beta) * square
        slope = beta * (h * outer - 1) - (1 - beta)
        return beta, constant, slope, 4 * beta * h / outer

    def variance(self, t: float) -> float:
        """β·Var_PM(t) + (1−β)·Var_D(t)."""
        value = Fraction(as_real("t", t))
        if not -1 <= value <= 1:
            raise ValueError(f"t must be in [-1, 1], got {t!r}")
        _, constant, slope, bump = self._mix()
        rounding = rounding_term(value, self.piecewise.outer_cells)
        return float(constant + slope * value * value + bump * rounding)

    @property
    def worst_variance(self) -> float:
        """Largest Var(y | t): exact when κ >= 2βh (at t = ±1), else at most βh/L above it."""
        beta, constant, slope, bump = self._mix()
        h = self.piecewise.half_step
        exact = slope >= 2 * beta * h
        return float(constant + max(slope, Fraction(0)) + (0 if exact else bump / 4))

    @property
    def worst_second_moment(self) -> float:
        """Largest E[y² | t]: β(A + hL) + (1−β)B², at t = ±1."""
        beta, pm = Fraction(self.beta), self.piecewise
        second = pm.variance_constant + pm.half_step * pm.outer_cells
        return float(beta * second + (1 - beta) * Fraction(self.bound) ** 2)

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether y is a report of a part in use."""
        valid = np.zeros(y.shape, dtype=bool)
        if self.beta > 0:
            valid |= self.piecewise.report_valid(y)
        if self.beta < 1:
            valid |= self.duchi.report_valid(y)
        return valid

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        return (
            f"A random number is sent instead of your answer (with probability "
            f"{self.beta:.0%} drawn near your answer, otherwise one of two fixed values whose "
            f"odds lean toward your answer), so any report is at most "
            f"{float(self._ratio):.2f} times as likely for one answer as for any other "
            f"(epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters, exact ε and grid, JSON-ready."""
        return {
            **self._describe_range(),
            "epsilon": self.epsilon,
            "beta": self.beta,
            "bound": self.bound,
            "center_cells": self.center_cells,
            "outer_cells": self.outer_cells,
            "grid_bits": self.grid_bits,
            "worst_variance": self.worst_variance,
        }
