"""What each estimator needs to know of a mechanism: small protocols of its rates.

The estimators (:mod:`._proportion`, :mod:`._frequency_estimate`, :mod:`._item_estimate`,
:mod:`._mean`, :mod:`._anytime`) take these protocols, never a mechanism class; the
mechanisms implement them structurally, by having the attributes. So the estimators sit
below the mechanisms, and a new mechanism with the same rates reuses an estimator as it is.
The rates are exact where the estimator needs them exact (the float a formula starts from
is then the correctly rounded exact rate, as in the mechanism itself).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms._mean_intervals import MeanInterval
from deniable.shared.mechanisms._tally import MeanTally, ReportGrid
from deniable.shared.stats import Estimand

__all__ = ["BinaryRates", "ItemRates", "Labelled", "MeanReports", "ReportGrid", "SupportRates"]


class Labelled(Protocol):
    """What an estimate records of the mechanism it came from."""

    @property
    def name(self) -> str:
        """The mechanism's registry name."""
        ...  # pragma: no cover

    @property
    def epsilon(self) -> float:
        """The mechanism's exact ε, rounded up."""
        ...  # pragma: no cover


class BinaryRates(Protocol):
    """A channel from a true bit to a reported bit, by its two rates, exactly.

    The yes/no estimator (:mod:`._proportion`) debiases the yes-rate λ = q + (p − q)·f;
    it is Warner's, for a symmetric channel (p + q = 1, randomized response with
    α = p − q).
    """

    @property
    def p_star_exact(self) -> Fraction:
        """The rate p = P(report 1 | truth 1)."""
        ...  # pragma: no cover

    @property
    def q_star_exact(self) -> Fraction:
        """The rate q = P(report 1 | truth 0), below p."""
        ...  # pragma: no cover


@runtime_checkable
class SupportRates(BinaryRates, Labelled, Protocol):
    """A frequency oracle over k options (:mod:`._frequency_estimate`).

    For each option v, p* = P(report supports v | truth v) and q* = P(report supports v |
    truth another option): the binary channel of "is it v?", the same for every v.
    """

    @property
    def k(self) -> int:
        """The number of options."""
        ...  # pragma: no cover

    @property
    def one_option_per_report(self) -> bool:
        """Whether every report supports exactly one option (the counts then sum to n)."""
        ...  # pragma: no cover


class ItemRates(Labelled, Protocol):
    """Per-item randomized response over k items (:mod:`._item_estimate`).

    Every item's bit is flipped with probability q, independently; q is a float, so the
    exact rate is the dyadic rational it holds.
    """

    @property
    def k(self) -> int:
        """The number of items."""
        ...  # pragma: no cover

    @property
    def q(self) -> float:
        """P(an item's bit is reported flipped), 0 < q < 1/2."""
        ...  # pragma: no cover


class MeanReports(ReportGrid, Labelled, Protocol):
    """A numeric mechanism as the mean estimator sees it (:mod:`._mean`, :mod:`._anytime`).

    Reports on the normalized scale [−1, 1] of the range [lo, hi], unbiased for the true
    value there, with the mechanism's own intervals for the mean report.
    """

    @property
    def lo(self) -> float:
        """Lower end of the public range."""
        ...  # pragma: no cover

    @property
    def hi(self) -> float:
        """Upper end of the public range."""
        ...  # pragma: no cover

    @property
    def anytime_method(self) -> str:
        """The ``method`` of :meth:`anytime_mean_interval`."""
        ...  # pragma: no cover

    def variance_x(self, n: int, estimand: Estimand = "population") -> float:
        """Worst-case variance of the mean of n reports, in x units."""
        ...  # pragma: no cover

    def to_x(self, t: float | Fraction) -> float:
        """The x = lo + (hi − lo)(t + 1)/2 of a normalized t, correctly rounded."""
        ...  # pragma: no cover

    def mean_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """The mechanism's interval for the mean report μ (normalized scale)."""
        ...  # pragma: no cover

    def conservative_interval(self, tally: MeanTally, confidence: float) -> MeanInterval:
        """An interval for μ valid for every population and every n."""
        ...  # pragma: no cover

    def anytime_mean_interval(
        self, n: ArrayLike, mean: ArrayLike, confidence: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """A confidence sequence for μ from n and ȳ (broadcast, not clipped)."""
        ...  # pragma: no cover
