"""Accuracy and coverage against ε: one simulation per (mechanism, ε), summarized for a plot."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from deniable.shared._validate import as_count, as_real, check_confidence

__all__ = [
    "BAND_LEVEL",
    "DEFAULT_EPSILONS",
    "Accuracy",
    "Simulate",
    "SweepPoint",
    "SweepResult",
    "coverage_band",
    "point_of",
    "rmse",
    "sweep",
]

DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 4.0)
"""The ε values a sweep runs when none are given."""

BAND_LEVEL = 0.95
"""Share of Binomial(repeats, nominal) inside the coverage band."""


@dataclass(frozen=True)
class SweepPoint:
    """One mechanism at one ε over the sweep's repeats.

    Attributes:
        mechanism: the mechanism's kind as asked.
        epsilon: ε per answer.
        rmse: root mean squared error of the unbiased estimate against the truth,
            sqrt(bias² + variance) over the repeats (averaged over options for a share per
            option), in the question's units.
        mean_width: mean interval width over repeats (and options).
        coverage: share of repeats whose interval held the truth (mean over options).
        coverage_se: its Monte Carlo standard error.
    """

    mechanism: str
    epsilon: float
    rmse: float
    mean_width: float
    coverage: float
    coverage_se: float


@dataclass(frozen=True)
class SweepResult:
    """Every (mechanism, ε) of a sweep, and the band a correct interval's coverage falls in.

    Attributes:
        question_type: ``binary``, ``categorical`` or ``numeric``.
        participants: participants per simulated survey.
        repeats: simulated surveys per point.
        confidence: nominal coverage of the intervals.
        method: the interval method (the numeric estimator picks its own per repeat).
        seed: the seed, when one was given (each point then derives its own).
        epsilons: the ε values asked for, in order.
        band_low: lower end of the central ``band_level`` share of Binomial(repeats,
            confidence)/repeats: the empirical coverage of an interval whose true coverage
            is the nominal one falls in [band_low, band_high] with that probability.
        band_high: upper end of that band.
        band_level: the band's level.
        points: one per mechanism and ε, mechanisms in the order given.
    """

    question_type: str
    participants: int
    repeats: int
    confidence: float
    method: str
    seed: int | None
    epsilons: tuple[float, ...]
    band_low: float
    band_high: float
    band_level: float
    points: tuple[SweepPoint, ...]

    def series(self) -> dict[str, list[SweepPoint]]:
        """The points by mechanism, each list in ε order: the lines a plot draws."""
        lines: dict[str, list[SweepPoint]] = {}
        for point in self.points:
            lines.setdefault(point.mechanism, []).append(point)
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)


def coverage_band(
    repeats: int, confidence: float, level: float = BAND_LEVEL
) -> tuple[float, float]:
    """Exact central ``level`` band of Binomial(repeats, confidence)/repeats.

    The smallest k with P(Y <= k) >= (1 − level)/2 and the smallest k with
    P(Y <= k) >= (1 + level)/2, divided by ``repeats``: where the empirical coverage of
    ``repeats`` independent intervals of true coverage ``confidence`` falls.
    """
    runs = as_count("repeats", repeats, minimum=1)
    nominal = check_confidence(confidence)
    from scipy import stats  # imported here: scipy.stats costs ~0.5 s

    tail = (1.0 - as_real("level", level)) / 2.0
    low, high = stats.binom.ppf([tail, 1.0 - tail], runs, nominal)
    return float(low) / runs, float(high) / runs


def rmse(bias: float, std: float | None) -> float:
    """Root mean squared error from a bias and a standard deviation (None: one repeat)."""
    return math.sqrt(bias * bias + (std or 0.0) ** 2)


@dataclass(frozen=True)
class Accuracy:
    """One simulation's figures for a sweep: RMSE, mean interval width and coverage.

    A question type computes them from its own simulation's result (a share per option
    averages over the options).
    """

    rmse: float
    mean_width: float
    coverage: float | None
    repeats: int


def point_of(accuracy: Accuracy, mechanism: str, epsilon: float) -> SweepPoint:
    """A simulation's accuracy and coverage as ``mechanism``'s point at ``epsilon``."""
    covered = accuracy.coverage if accuracy.coverage is not None else math.nan
    return SweepPoint(
        mechanism=mechanism,
        epsilon=epsilon,
        rmse=accuracy.rmse,
        mean_width=accuracy.mean_width,
        coverage=covered,
        coverage_se=math.sqrt(covered * (1.0 - covered) / accuracy.repeats),
    )


Simulate = Callable[[str, float, int | None], Accuracy]
"""Runs one simulation: (mechanism kind, ε, seed) to its accuracy, at the sweep's n and repeats."""


def sweep(
    question_type: str,
    simulate: Simulate,
    mechanisms: Sequence[str],
    epsilons: Sequence[float],
    *,
    participants: int,
    repeats: int,
    confidence: float,
    method: str,
    seed: int | None,
    progress: Callable[[int], None] | None = None,
) -> SweepResult:
    """Run ``simulate`` for every mechanism at every ε and summarize each run as a point.

    With ``seed``, point i runs with seed ``seed + i`` (reproducible, independent draws).
    """
    runs = as_count("repeats", repeats, minimum=2)
    points = []
    index = 0
    for mechanism in mechanisms:
        for epsilon in epsilons:
            result = simulate(mechanism, epsilon, None if seed is None else seed + index)
            points.append(point_of(result, mechanism, epsilon))
            index += 1
            if progress is not None:
                progress(1)
    low, high = coverage_band(runs, confidence)
    return SweepResult(
        question_type=question_type,
        participants=participants,
        repeats=runs,
        confidence=confidence,
        method=method,
        seed=seed,
        epsilons=tuple(epsilons),
        band_low=low,
        band_high=high,
        band_level=BAND_LEVEL,
        points=tuple(points),
    )
