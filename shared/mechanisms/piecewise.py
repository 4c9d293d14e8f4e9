"""Piecewise mechanism (Wang et al., ICDE 2019) discretized onto a dyadic output grid."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._validate import as_real
from deniable.shared.mechanisms._numeric import NumericMechanism, check_epsilon, check_int, on_grid
from deniable.shared.mechanisms._numeric_sampling import stochastic_round
from deniable.shared.sampling import ByteSource, bernoulli_rational, uniform_below
from deniable.shared.stats._sequences import BennettBound

__all__ = ["PiecewiseMechanism", "rounding_term"]

_MAX_CELLS = 1 << 52  # every report z·2^-g has |z| < 2^52: an exact float
_TARGET_CENTER = 1 << 20  # about 2^20 centre cells: ε within ~1e-6 of the request
_MAX_FROM_EPSILON_CELLS = 1 << 50


def rounding_term(t: Fraction, steps: int) -> Fraction:
    """f(1−f) where f is the fractional part of the input position (t + 1)·steps/2."""
    position = (t + 1) * steps / 2
    frac = position - math.floor(position)
    return frac * (1 - frac)


def _ratio(center: int, outer: int, h: Fraction) -> Fraction:
    """ρ = (1 + 1/(hW)) / (1 − 1/(hL)): P(high cell)/P(low cell), the privacy ratio."""
    return outer * (h * center + 1) / (center * (h * outer - 1))


@dataclass(frozen=True)
class PiecewiseMechanism(NumericMechanism):
    """The Piecewise mechanism on a dyadic grid: exactly unbiased and exactly ε-LDP.

    Output grid. N = W + L cells of width 2h, h = 2^-grid_bits; cell i (0 <= i < N) is
    reported as its midpoint y_i = (2i + 1 − N)·h, so every report is an integer multiple
    of h with |y| <= (N − 1)h (the continuous mechanism's C is N·h).

    Input grid. t in [−1, 1] is stochastically rounded to k in {0, ..., L} with
    E[k] = (t + 1)L/2 (an exact rational Bernoulli of the fractional part), i.e. onto
    t_k = 2k/L − 1.

    Output given k. The W cells k, ..., k + W − 1 (the window, the continuous [l(t), r(t)])
    are "high"; the other L cells are "low". With probability P_c = (hW + 1)/(hN) a
    uniform high cell is reported, otherwise a uniform low cell: P(high cell) = (hW+1)/(WhN),
    P(low cell) = (hL−1)/(LhN). The window sum of y is hW(2k − L), which gives
    E[y | k] = t_k exactly, hence E[y | t] = t after the unbiased rounding.

    Privacy. For any input the probability of any output cell is a mixture of the high
    and low probabilities, so for any two inputs the ratio is at most
    ρ = P(high)/P(low) = (1 + 1/(hW)) / (1 − 1/(hL)), attained by t = −1 (k = 0) and
    t = +1 (k = L) at cell 0. ε = ln ρ exactly, rounded up to a float by ``tightest_epsilon``.
    With hW = 1/(e^{ε/2} − 1) and hL = e^{ε/2}/(e^{ε/2} − 1) this is the continuous
    mechanism (ρ = e^ε); ``from_epsilon`` picks W, L near those values, certified at the
    requested ε.

    Variance. Var(y | t) = A + (hL − 1)t² + 4h·f(1−f)/L where
    A = h[(hL − 1)(N² − 1) + W² − 1]/(3L) and f is the fractional part of (t + 1)L/2;
    the worst case is t = ±1 when hL − 1 >= 2h (then it is exact), and
    max E[y² | t] = A + hL.

    Attributes:
        lo: lower end of the public range.
        hi: upper end of the public range.
        center_cells: W >= 1, cells in the high window.
        outer_cells: L >= 1, cells outside it (also the number of input steps), hL > 1.
        grid_bits: g, the output half-step h = 2^-g.
    """

    name: ClassVar[str] = "piecewise"
    title: ClassVar[str] = "Piecewise mechanism (Wang et al. 2019)"

    T_INTERVAL_FROM: ClassVar[tuple[tuple[float, int], ...]] = (
        (2.0, 200),
        (3.0, 500),
        (4.0, 1000),
        (6.0, 2000),
        (8.0, 5000),
    )
    """t-intervals from these n at ε up to these (simulated worst populations, docs)."""

    center_cells: int
    outer_cells: int
    grid_bits: int
    epsilon: float = field(init=False, compare=False)
    _ratio: Fraction = field(init=False, repr=False, compare=False)
    _constant: Fraction = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        center = check_int("center_cells", self.center_cells, 1, _MAX_CELLS)
        outer = check_int("outer_cells", self.outer_cells, 1, _MAX_CELLS)
        bits = self.grid_bits
        if isinstance(bits, bool) or not isinstance(bits, int) or not -64 <= bits <= 64:
            raise ValueError(f"grid_bits must be an integer in [-64, 64], got {bits!r}")
        if center + outer > _MAX_CELLS:
            raise ValueError(f"center_cells + outer_cells must be <= 2^52, got {center} + {outer}")
        h = Fraction(2) ** -bits
        if h * outer <= 1:
            raise ValueError(
                f"outer_cells * 2^-grid_bits must be > 1, "
                f"got {outer} * 2^{-bits} = {float(h * outer)!r}"
            )
        object.__setattr__(self, "center_cells", center)
        object.__setattr__(self, "outer_cells", outer)
        cells = center + outer
        ratio = _ratio(center, outer, h)
        constant = h * ((h * outer - 1) * (cells * cells - 1) + center * center - 1) / (3 * outer)
        object.__setattr__(self, "_ratio", ratio)
        object.__setattr__(self, "_constant", constant)
        object.__setattr__(self, "epsilon", tightest_epsilon(ratio))

    @classmethod
    def from_epsilon(cls, lo: float, hi: float, epsilon: float) -> PiecewiseMechanism:
        """The grid closest to the continuous mechanism whose exact ε is at most ``epsilon``.

        About 2^20 centre cells (fewer when ε is so large that N would pass 2^50), so the
        certified ε falls short of the request by about 1e-6 relative.

        Example:
            >>> spec = PiecewiseMechanism.from_epsilon(0.0, 10.0, 1.0)
            >>> spec.certifies(1.0), spec.epsilon <= 1.0, round(spec.worst_variance, 3)
            (True, True, 5.224)
        """
        eps = check_epsilon(epsilon)
        half = eps / 2
        width = 1 / math.expm1(half)  # h·W of the continuous mechanism
        outside = math.exp(half) * width  # h·L
        bits = max(  # at least 0: the wire's grid_bits is unsigned (tiny ε, wide cells)
            0,
            min(
                math.floor(math.log2(_TARGET_CENTER / width)),
                math.floor(math.log2(_MAX_FROM_EPSILON_CELLS / (width + outside))),
            ),
        )
        h = Fraction(2) ** -bits
        center = max(1, math.ceil(width * 2.0**bits))
        outer = max(2, math.ceil(outside * 2.0**bits))

        def ok(w: int, ell: int) -> bool:
            return w >= 1 and h * ell > 1 and exp_at_least(eps, _ratio(w, ell, h))

        while not ok(center, outer):
            center, outer = center + 1, outer + 1
        while ok(center - 1, outer):
            center -= 1
        while ok(center, outer - 1):
            outer -= 1
        return cls(lo, hi, center_cells=center, outer_cells=outer, grid_bits=bits)

    # --- exact parameters -----------------------------------------------------------------

    @property
    def cells(self) -> int:
        """N = W + L output cells."""
        return self.center_cells + self.outer_cells

    @property
    def half_step(self) -> Fraction:
        """The half-step h = 2^-grid_bits: reports are odd or even multiples of h (N's parity)."""
        return Fraction(2) ** -self.grid_bits

    @property
    def privacy_ratio(self) -> Fraction:
        """ρ = P(high cell)/P(low cell) exactly: the worst-case likelihood ratio."""
        return self._ratio

    @property
    def p_center_exact(self) -> Fraction:
        """Probability (hW + 1)/(hN) of reporting a cell of the high window."""
        h = self.half_step
        return (h * self.center_cells + 1) / (h * self.cells)

    @property
    def variance_constant(self) -> Fraction:
        """A in Var(y | t) = A + (hL − 1)t² + 4h·f(1−f)/L."""
        return self._constant

    @property
    def bound(self) -> float:
        """Largest |report|, (N − 1)·h (the continuous C is N·h)."""
        return float((self.cells - 1) * self.half_step)

    @property
    def report_bound(self) -> float:
        """(N − 1)·h: every report lies in [−bound, bound]."""
        return self.bound

    @property
    def grid_step(self) -> float:
        """Distance 2h between neighbouring reports."""
        return float(2 * self.half_step)

    @property
    def unit_bits(self) -> int:
        """Reports are integer multiples of 2^-grid_bits."""
        return self.grid_bits

    def certifies(self, epsilon: float) -> bool:
        """Return whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return self._certifies_ratio(epsilon, self._ratio)

    # --- variance -------------------------------------------------------------------------

    def variance_exact(self, t: Fraction) -> Fraction:
        """Var(y | t) exactly, for rational t in [−1, 1]."""
        if not -1 <= t <= 1:
            raise ValueError(f"t must be in [-1, 1], got {float(t)!r}")
        h, outer = self.half_step, self.outer_cells
        bump = 4 * h * rounding_term(t, outer) / outer
        return self._constant + (h * outer - 1) * t * t + bump

    def variance(self, t: float) -> float:
        """Var(y | t) of one report for t in [−1, 1]."""
        return float(self.variance_exact(Fraction(as_real("t", t))))

    @property
    def worst_variance_exact(self) -> Fraction:
        """Largest Var(y | t): exact when hL − 1 >= 2h, else within h/L above it."""
        h, outer = self.half_step, self.outer_cells
        slope = h * outer - 1
        return self._constant + slope + (0 if slope >= 2 * h else h / outer)

    @property
    def worst_variance(self) -> float:
        """Worst per-report variance on [−1, 1]; → 4e^{ε/2}/(3(e^{ε/2}−1)²) on a fine grid."""
        return float(self.worst_variance_exact)

    @property
    def worst_second_moment(self) -> float:
        """Largest E[y² | t]: A + hL, at t = ±1."""
        return float(self._constant + self.half_step * self.outer_cells)

    def anytime_bound(self) -> BennettBound:
        """Bennett: Var(y) <= the worst E[y²], |y − μ| <= the largest |y| plus 1."""
        return BennettBound(self.worst_second_moment, self.bound + 1.0)

    # --- reports --------------------------------------------------------------------------

    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether y = (2i + 1 − N)·h for an integer 0 <= i < N."""
        cells = self.cells
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.ldexp(y, self.grid_bits)
            inside = on_grid(y, self.grid_bits) & (np.abs(z) <= cells - 1)
            parity = np.fmod(np.where(inside, z, 0.0) + (cells + 1), 2.0) == 0
        return np.asarray(inside & parity)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        share = float(self.p_center_exact)
        return (
            f"A random number is sent instead of your answer: with probability {share:.0%} "
            f"it is drawn near your answer, otherwise anywhere else in a wider range, so any "
            f"report is at most {float(self._ratio):.2f} times as likely for one answer as "
            f"for any other (epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters, exact ε and grid, JSON-ready."""
        return {
            **self._describe_range(),
            "epsilon": self.epsilon,
            "center_cells": self.center_cells,
            "outer_cells": self.outer_cells,
            "grid_bits": self.grid_bits,
            "p_center": float(self.p_center_exact),
            "bound": self.bound,
            "grid_step": self.grid_step,
            "worst_variance": self.worst_variance,
        }

    def _sample(self, numerators: list[int], denominator: int, source: ByteSource) -> Any:
        """Round the input onto L steps, then a uniform high cell w.p. P_c, else a low one.

        Both a high and a low cell are drawn for every answer and one is picked by
        arithmetic, so the randomness read does not say which region the report is in.
        """
        size, center, outer, cells = (
            len(numerators),
            self.center_cells,
            self.outer_cells,
            self.cells,
        )
        k = stochastic_round(numerators, denominator, outer, source)
        p = self.p_center_exact
        high = bernoulli_rational(p.numerator, p.denominator, source, size).astype(np.int64)
        inside = k + uniform_below(center, size, source).astype(np.int64)
        low = uniform_below(outer, size, source).astype(np.int64)
        outside = low + center * (low >= k)
        cell = outside + high * (inside - outside)
        return np.ldexp((2 * cell + 1 - cells).astype(np.float64), -self.grid_bits)
