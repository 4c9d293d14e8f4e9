"""The Hybrid mechanism (Wang et al., ICDE 2019): Piecewise with probability β, else Duchi."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared._exact import tightest_epsilon
from deniable.shared._validate import as_real
from deniable.shared.mechanisms._mean import MeanTally
from deniable.shared.mechanisms._mean_intervals import MeanInterval, two_point_interval
from deniable.shared.mechanisms._numeric import NumericMechanism, check_epsilon
from deniable.shared.mechanisms.duchi import DuchiMechanism
from deniable.shared.mechanisms.piecewise import PiecewiseMechanism, rounding_term
from deniable.shared.sampling import ByteSource, bernoulli
from deniable.shared.stats._sequences import BennettBound

__all__ = ["HYBRID_THRESHOLD", "HybridMechanism"]

HYBRID_THRESHOLD = 0.61
"""Above this ε the Hybrid mechanism mixes in Piecewise (Wang et al., ICDE 2019)."""


@dataclass(frozen=True)
class HybridMechanism(NumericMechanism):
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

    name: ClassVar[str] = "hybrid"
    title: ClassVar[str] = "Hybrid: Piecewise or Duchi at random"

    T_INTERVAL_FROM: ClassVar[tuple[tuple[float, int], ...]] = (
        (2.0, 200),
        (3.0, 500),
        (6.0, 2000),
        (8.0, 5000),
    )
    """t-intervals from these n at ε up to these (simulated worst populations, docs)."""

    beta: float
    bound: float
    center_cells: int
    outer_cells: int
    grid_bits: int
    epsilon: float = field(init=False, compare=False)
    piecewise: PiecewiseMechanism = field(init=False, repr=False, compare=False)
    duchi: DuchiMechanism = field(init=False, repr=False, compare=False)
    _ratio: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        beta = as_real("beta", self.beta)
        if not 0.0 <= beta <= 1.0:  # also rejects NaN
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        object.__setattr__(self, "beta", beta)
        pm = PiecewiseMechanism(
            self.lo, self.hi, self.center_cells, self.outer_cells, self.grid_bits
        )
        duchi = DuchiMechanism(self.lo, self.hi, self.bound)
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
    def from_epsilon(cls, lo: float, hi: float, epsilon: float) -> HybridMechanism:
        """Both parts certified at ``epsilon``; β = 1 − e^(−ε/2) above ε = 0.61, else 0.

        Example:
            >>> spec = HybridMechanism.from_epsilon(0.0, 1.0, 1.0)
            >>> spec.certifies(1.0), round(spec.worst_variance, 3)
            (True, 4.289)
        """
        eps = check_epsilon(epsilon)
        pm = PiecewiseMechanism.from_epsilon(lo, hi, eps)
        bound = DuchiMechanism.from_epsilon(lo, hi, eps).bound
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

    @property
    def report_bound(self) -> float:
        """Largest |report| of the parts in use: B and the Piecewise part's (N − 1)·h."""
        return max(
            self.piecewise.bound if self.beta > 0 else 0.0, self.bound if self.beta < 1 else 0.0
        )

    def mean_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """Pure Duchi (β = 0): Clopper–Pearson, exact; otherwise t or Bernstein by the rule."""
        if self.beta == 0:
            return two_point_interval(tally.n, tally.mean, self.bound, confidence)
        return super().mean_interval(tally, confidence)

    def anytime_bound(self) -> BennettBound:
        """Bennett: Var(y) <= the worst E[y²], |y − μ| <= the largest |y| in use plus 1."""
        parts = ((self.piecewise.bound, self.beta > 0), (self.duchi.bound, self.beta < 1))
        largest = max(bound for bound, used in parts if used)
        return BennettBound(self.worst_second_moment, largest + 1.0)

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

    def _sample(self, numerators: list[int], denominator: int, source: ByteSource) -> Any:
        """An exact Bernoulli(β) per answer picks the Piecewise part, else the Duchi part.

        Both parts perturb every answer and the report is picked by arithmetic, so the
        randomness read does not say which part the report comes from.
        """
        use_pm = bernoulli(Fraction(self.beta), len(numerators), source)
        piecewise = np.asarray(self.piecewise._sample(numerators, denominator, source))
        duchi = np.asarray(self.duchi._sample(numerators, denominator, source))
        # Pick the float's bits with a mask (all ones for Piecewise): exact, no branch.
        mask = -use_pm.astype(np.int64)
        bits = duchi.view(np.int64) ^ (mask & (duchi.view(np.int64) ^ piecewise.view(np.int64)))
        return bits.view(np.float64)
