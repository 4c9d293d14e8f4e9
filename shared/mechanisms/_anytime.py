"""Anytime-valid intervals (confidence sequences) for each family's estimate, from its tally."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms._frequency_estimate import (
    FrequencyEstimate,
    estimate_frequencies,
    support_floats,
)
from deniable.shared.mechanisms._mean import MeanEstimate, estimate_mean
from deniable.shared.mechanisms._proportion import (
    ProportionEstimate,
    debias,
    estimate_proportion,
    keep_probability,
)
from deniable.shared.mechanisms._rates import BinaryRates, MeanReports, SupportRates
from deniable.shared.mechanisms._tally import MeanTally
from deniable.shared.stats import RATE_METHOD, anytime_coverage, anytime_rate_interval

__all__ = [
    "frequencies_anytime",
    "frequency_interval",
    "mean_anytime",
    "proportion_anytime",
    "proportion_interval",
]


def proportion_interval(
    spec: BinaryRates, ones: ArrayLike, n: ArrayLike, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The CS for the yes-share, one per entry of ``ones`` and ``n`` (broadcast).

    The yes-reports of i.i.d. participants are Bernoulli(λ), λ = αp + (1 − α)/2; the CS
    for λ maps through the increasing p = (λ − (1 − α)/2)/α and is clipped to [0, 1]
    (p lies there), so it covers p at every look whenever it covers λ.
    """
    low, high = anytime_rate_interval(ones, n, confidence)
    return np.clip(debias(spec, low), 0.0, 1.0), np.clip(debias(spec, high), 0.0, 1.0)


def frequency_interval(
    spec: SupportRates, counts: ArrayLike, n: ArrayLike, confidence: float, simultaneous: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each option's CS for its share; ``counts`` has the k options last, ``n`` broadcasts.

    Each report supports option v with probability λ_v = q* + f_v(p* − q*), independently
    across i.i.d. participants, so C_v is a running Bernoulli count and its CS maps to f_v
    like the fixed-n interval. ``simultaneous``: each option's CS at level
    1 − (1 − confidence)/k, so all k hold at once at every look (Bonferroni).
    """
    each = 1.0 - (1.0 - confidence) / spec.k if simultaneous else confidence
    low, high = anytime_rate_interval(counts, np.asarray(n)[..., None], each)
    q, gap = support_floats(spec)
    return np.clip((low - q) / gap, 0.0, 1.0), np.clip((high - q) / gap, 0.0, 1.0)


def proportion_anytime(
    spec: BinaryRates, ones: int, n: int, confidence: float
) -> ProportionEstimate:
    """The yes-share with its confidence sequence (:func:`proportion_interval`)."""
    base = estimate_proportion(ones, n, keep_probability(spec)[1], confidence)
    low, high = proportion_interval(spec, ones, n, base.confidence)
    return dataclasses.replace(
        base,
        ci_low=float(low),
        ci_high=float(high),
        method=RATE_METHOD,
        coverage=anytime_coverage(base.confidence),
        anytime=True,
    )


def frequencies_anytime(
    spec: SupportRates, counts: NDArray[np.int64], n: int, confidence: float, simultaneous: bool
) -> FrequencyEstimate:
    """Every option's share with its confidence sequence, consistent with the estimate.

    The fixed-n path with :func:`anytime_rate_interval` as each option's rate interval:
    so the simultaneous ones are Bonferroni over the k options and tightened to the
    simplex (on the event that every sequence covers at every look, the true shares lie
    in that box and sum to 1), and every interval is widened where needed to contain the
    projected estimate (a superset keeps the coverage).
    """
    base = estimate_frequencies(
        counts, n, spec, confidence, simultaneous=simultaneous, rate_interval=_rate_interval
    )
    widened = "; each widened where needed to contain the projected estimate"
    if simultaneous:
        widened = "; tightened to the simplex" + widened
    return dataclasses.replace(
        base,
        method=RATE_METHOD,
        coverage=anytime_coverage(base.confidence, spec.k if simultaneous else 0) + widened,
        anytime=True,
    )


def _rate_interval(
    counts: NDArray[np.float64], n: int, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return anytime_rate_interval(counts, n, confidence)


def mean_anytime(spec: MeanReports, tally: MeanTally, confidence: float) -> MeanEstimate:
    """The mean with the mechanism's confidence sequence (:meth:`anytime_mean_interval`).

    The CS is for the mean report μ on the normalized scale, which is the population mean
    of t; it maps affinely to x and is clipped to [lo, hi].
    """
    base = estimate_mean(spec, tally, confidence)
    low, high = spec.anytime_mean_interval(tally.n, float(tally.mean), base.confidence)
    return dataclasses.replace(
        base,
        ci_low=_clip(spec, float(low)),
        ci_high=_clip(spec, float(high)),
        method=spec.anytime_method,
        coverage=anytime_coverage(base.confidence),
        anytime=True,
    )


def _clip(spec: MeanReports, t: float) -> float:
    """The x of the normalized ``t`` clipped to [−1, 1], correctly rounded."""
    return spec.to_x(Fraction(min(max(t, -1.0), 1.0)))
