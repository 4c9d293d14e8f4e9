"""Numeric mechanisms: a number on a public range, reported on a dyadic grid, mean estimated."""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from operator import mul
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import exp_at_least
from deniable.shared._validate import as_count, as_real, check_finite
from deniable.shared.mechanisms._anytime import mean_anytime
from deniable.shared.mechanisms._base import Mechanism, ReportValueError, Tally
from deniable.shared.mechanisms._mean import MeanEstimate, estimate_mean
from deniable.shared.mechanisms._mean_intervals import (
    T_CONFIDENCE_CHECKED,
    MeanInterval,
    bernstein_interval,
    percent,
    t_interval,
    theorem,
)
from deniable.shared.mechanisms._numeric_sampling import exact_positions
from deniable.shared.mechanisms._tally import MeanTally, as_reports
from deniable.shared.sampling import ByteSource, source_for
from deniable.shared.stats import Estimand, check_estimand
from deniable.shared.stats._sequences import LogMgfBound
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "MAX_EPSILON",
    "MIN_EPSILON",
    "NumericMechanism",
    "as_reports",
    "check_epsilon",
    "check_int",
    "first_invalid",
    "on_grid",
]

MIN_EPSILON = 2.0**-20
"""Smallest ε a numeric mechanism accepts: below it reports would need astronomic values."""
MAX_EPSILON = 50.0
"""Largest ε a numeric mechanism accepts (e^50 ≈ 5·10^21: no privacy left to speak of)."""


def check_epsilon(epsilon: object) -> float:
    """Return ``epsilon`` as a float in [MIN_EPSILON, MAX_EPSILON], else raise naming it."""
    eps = as_real("epsilon", epsilon)
    if not (MIN_EPSILON <= eps <= MAX_EPSILON):  # also rejects NaN
        raise ValueError(
            f"epsilon must be in [2^-20, {MAX_EPSILON:g}] for a numeric mechanism, got {eps!r}"
        )
    return eps


def check_int(name: str, value: object, low: int, high: int) -> int:
    """Return ``value`` as an int in [low, high], else raise naming it."""
    number = as_count(name, value, minimum=low)
    if number > high:
        raise ValueError(f"{name} must be <= {high}, got {number}")
    return number


def on_grid(y: NDArray[np.float64], bits: int) -> NDArray[np.bool_]:
    """Finite entries of ``y`` that are integer multiples of 2^-bits (NaN and inf are not)."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.ldexp(y, bits)
        return np.asarray(np.isfinite(scaled) & (scaled == np.floor(scaled)))


def first_invalid(valid: NDArray[np.bool_]) -> int | None:
    """Index of the first False entry, or None when every entry is valid."""
    bad = np.flatnonzero(~valid)
    return int(bad[0]) if bad.size else None


def _check_range(lo: object, hi: object) -> tuple[float, float]:
    low = check_finite("lo", as_real("lo", lo))
    high = check_finite("hi", as_real("hi", hi))
    if not low < high:
        raise ValueError(f"lo must be < hi, got lo={low!r}, hi={high!r}")
    if not math.isfinite(high - low):
        raise ValueError(f"hi - lo must be a finite float, got lo={low!r}, hi={high!r}")
    return low, high


@dataclass(frozen=True)
class NumericMechanism(Mechanism):
    """A mechanism for a value x on the public range [lo, hi] (a ``numeric`` question).

    Every numeric mechanism works on the normalized value t = 2(x − lo)/(hi − lo) − 1 in
    [−1, 1] and sends one report y on that scale with E[y | t] = t exactly. Reports lie on
    a dyadic grid (integer multiples of 2^-unit_bits), which :meth:`report_valid`
    recognises exactly, so the running tally n, Σz, Σz² of z = y·2^unit_bits is exact. The
    mean's interval is the mechanism's :meth:`mean_interval` (:mod:`._mean`). Sampling uses exact
    rational probabilities of the true value's exact position; no floating-point noise
    touches the answer.

    Attributes:
        lo: lower end of the public range (finite).
        hi: upper end of the public range (finite, > lo).
    """

    question_type: ClassVar[str] = "numeric"
    value_field: ClassVar[str] = "number"

    lo: float
    hi: float

    def __post_init__(self) -> None:
        lo, hi = _check_range(self.lo, self.hi)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    # --- what every numeric mechanism defines -------------------------------------------

    @property
    @abstractmethod
    def worst_variance(self) -> float:
        """Largest Var(y | t) over t on the [−1, 1] scale."""

    @property
    @abstractmethod
    def worst_second_moment(self) -> float:
        """Largest E[y² | t] over t: the worst population variance of one report."""

    @abstractmethod
    def variance(self, t: float) -> float:
        """Var(y | t) of one report for a normalized true value t in [−1, 1]."""

    @property
    @abstractmethod
    def unit_bits(self) -> int:
        """G such that every report is an integer multiple of 2^-G (exact tallies)."""

    @abstractmethod
    def report_valid(self, y: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Elementwise: is y a report this mechanism can output?"""

    @abstractmethod
    def _sample(self, numerators: list[int], denominator: int, source: ByteSource) -> Any:
        """Reports for true positions u_i = numerators[i]/denominator in [0, 1], exactly."""

    @abstractmethod
    def anytime_bound(self) -> LogMgfBound:
        """A bound ψ(θ) on log E exp(θ(y − μ)) for one report of an i.i.d. participant.

        It must hold for every population mean μ in [−1, 1]; the anytime interval
        (:meth:`anytime_mean_interval`) is built on it.
        """

    @property
    def anytime_method(self) -> str:
        """The ``method`` of :meth:`anytime_mean_interval`."""
        return self.anytime_bound().method

    def anytime_mean_interval(
        self, n: ArrayLike, mean: ArrayLike, confidence: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """A confidence sequence for the mean report μ (normalized scale), from n and ȳ.

        ȳ ± r_n from the mixture of exponential supermartingales on :meth:`anytime_bound`
        (:func:`deniable.shared.stats._sequences.mean_radius`); entries of ``n`` and
        ``mean`` broadcast, one interval each, not clipped.
        """
        from deniable.shared.stats._sequences import mean_radius

        radius = mean_radius(n, self.anytime_bound(), confidence)
        centre = np.asarray(mean, dtype=np.float64)
        return centre - radius, centre + radius

    # --- wire -----------------------------------------------------------------------------

    @classmethod
    def from_question(cls, question: pb.Question) -> NumericMechanism:
        """The mechanism on the question's [min, max] with its message's parameters."""
        message = getattr(question.mechanism, cls.name)
        parameters = {name: getattr(message, name) for name in message.DESCRIPTOR.fields_by_name}
        return cls(question.numeric.min, question.numeric.max, **parameters)

    def parameters(self) -> dict[str, float]:
        """The fields of the mechanism's wire message, from this mechanism."""
        message = pb.Mechanism.DESCRIPTOR.fields_by_name[self.name].message_type
        assert message is not None  # every Mechanism.kind field is a message
        return {name: getattr(self, name) for name in message.fields_by_name}

    # --- the participant's side -----------------------------------------------------------

    def perturb_many(
        self, truths: ArrayLike, rng: np.random.Generator | None = None, *, clamp: bool = False
    ) -> NDArray[np.float64]:
        """Reports for an array of true values (same shape, float64, on the output grid).

        Values outside [lo, hi] raise a ValueError naming the first one unless ``clamp``.
        """
        array = np.asarray(truths)
        nums, den = exact_positions(array, self.lo, self.hi, clamp=clamp)
        reports = self._sample(nums, den, source_for(rng))
        return np.asarray(reports, dtype=np.float64).reshape(array.shape)

    def perturb(
        self, value: float, rng: np.random.Generator | None = None, *, clamp: bool = False
    ) -> float:
        """The report for one true value."""
        array = np.asarray(value)
        if array.ndim != 0:
            raise ValueError(
                f"value must be a single number, got shape {array.shape}; use perturb_many"
            )
        return float(self.perturb_many(array, rng, clamp=clamp))

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"number": y}`` per report (on the normalized scale)."""
        return [{"number": float(y)} for y in np.asarray(reports).ravel().tolist()]

    # --- the aggregator's side ------------------------------------------------------------

    def validate_report(self, reports: ArrayLike) -> int | None:
        """Index (flattened order) of the first report off the output grid, NaN or inf; or None.

        Example:
            >>> from deniable.shared.mechanisms import DuchiMechanism
            >>> DuchiMechanism(0.0, 1.0, bound=3.0).validate_report([3.0, -3.0, 2.5])
            2
        """
        return first_invalid(self.report_valid(as_reports(reports)))

    def decode(self, values: Any) -> NDArray[np.float64]:
        """Received numbers, each on the mechanism's grid."""
        numbers = np.asarray(values, dtype=np.float64)
        first = self.validate_report(numbers)
        if first is not None:
            message = f"{float(numbers[first])!r} is not a possible {self.name} report"
            raise ReportValueError(first, "number", message)
        return numbers

    def tally(self, reports: Any) -> list[int]:
        """[Σz, Σz²] with z = y·2^unit_bits: exact integers, any number of reports."""
        chosen = [int(v) for v in np.ldexp(np.asarray(reports), self.unit_bits).tolist()]
        return [sum(chosen), sum(map(mul, chosen, chosen))]

    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "t",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> MeanEstimate:
        """The population mean with the mechanism's interval (``method`` does not apply).

        The fixed-n interval's construction is :meth:`mean_interval`'s; ``anytime``: a
        confidence sequence instead (:meth:`anytime_mean_interval`).
        """
        total, squares = (*tally.sums, 0, 0)[:2]
        sums = MeanTally(self.unit_bits, tally.n, total, squares)
        if anytime:
            return mean_anytime(self, sums, confidence)
        return estimate_mean(self, sums, confidence)

    # --- intervals for the mean -----------------------------------------------------------

    T_INTERVAL_FROM: ClassVar[tuple[tuple[float, int], ...]] = ()
    """(ε, N) pairs by ascending ε: at a mechanism's ε up to that ε, t-intervals from N reports.

    Decided from simulations of the worst populations (docs/statistics.md, "Numeric
    intervals"); beyond the last ε, and for mechanisms without a table, never.
    """

    @property
    def t_interval_min_n(self) -> int | None:
        """Fewest reports from which this mechanism's mean gets a t-interval (None: never)."""
        for epsilon, count in self.T_INTERVAL_FROM:
            if self.epsilon <= epsilon:
                return count
        return None

    @property
    def report_bound(self) -> float:
        """Largest |y| a report can take (inf when the output is unbounded)."""
        return math.inf

    def mean_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """An interval for the mean report μ, on the normalized scale, from the tally.

        The t-interval ȳ ± t_{n−1}·s/√n where simulations of the worst populations showed
        it keeps its level (n >= :attr:`t_interval_min_n`, confidence at most 95%; decided
        from the mechanism, its ε and n, never from the reports) and it has a width;
        otherwise :meth:`conservative_interval`, which holds for every population.
        """
        threshold = self.t_interval_min_n
        n = tally.n
        if threshold is not None and n >= max(threshold, 2) and confidence <= T_CONFIDENCE_CHECKED:
            low, high = t_interval(n, tally.mean, tally.sample_variance, confidence)
            if low < high:
                return MeanInterval(
                    low,
                    high,
                    "t",
                    f"fixed n; approximately {percent(confidence)} (t-interval; n >= "
                    f"{threshold:,} for {self.name} at ε {self.epsilon:.4g}, checked by "
                    "simulation)",
                )
        return self.conservative_interval(tally, confidence)

    def conservative_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """Bernstein's inequality with |y| <= :attr:`report_bound` and E[y²] <= worst second moment.

        Valid for every population and every n (:func:`._mean_intervals.bernstein_interval`);
        all of [−1, 1] for an unbounded mechanism, which overrides this.
        """
        found = bernstein_interval(
            tally.n, float(tally.mean), self.report_bound, self.worst_second_moment, confidence
        )
        low, high = found if found is not None else (math.nan, math.nan)
        how = "Bernstein's inequality with the mechanism's variance and range bounds"
        return MeanInterval(low, high, "bernstein", theorem(confidence, how))

    def estimate_variance(self, n: int, share: float | None = None) -> float:
        """Worst-case Var(mean) from n participants, in x units (``variance_x``)."""
        return self.variance_x(n, "population")

    # --- scale ----------------------------------------------------------------------------

    def normalize(self, x: float) -> float:
        """The normalized t = 2(x − lo)/(hi − lo) − 1, correctly rounded (x not range-checked)."""
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        return float(2 * (Fraction(as_real("x", x)) - lo) / (hi - lo) - 1)

    def to_x(self, t: float | Fraction) -> float:
        """Map a normalized value back: x = lo + (hi − lo)(t + 1)/2, correctly rounded."""
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        return float(lo + (hi - lo) * (Fraction(t) + 1) / 2)

    def variance_x(self, n: int, estimand: Estimand = "population") -> float:
        """Worst-case variance of the mean of n reports, in x units.

        ``population`` (participants i.i.d. from a population; what the t-interval covers):
        worst_second_moment·((hi−lo)/2)²/n. ``respondents`` (these n true values fixed):
        worst_variance·((hi−lo)/2)²/n.
        """
        count = as_count("n", n, minimum=1)
        per_report = (
            self.worst_second_moment
            if check_estimand(estimand) == "population"
            else self.worst_variance
        )
        half = (self.hi - self.lo) / 2.0
        return per_report * half * half / count

    def _describe_range(self) -> dict[str, Any]:
        return {"mechanism": self.name, "lo": self.lo, "hi": self.hi}

    @staticmethod
    def _certifies_ratio(epsilon: float, ratio: Fraction) -> bool:
        return exp_at_least(as_real("epsilon", epsilon), ratio)
