"""Simulated repeated looks: how often each interval ever missed the truth during a survey."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms import (
    BinaryRates,
    FrequencyOracle,
    NumericMechanism,
    frequency_arrays,
    proportion_arrays,
)
from deniable.shared.mechanisms._anytime import frequency_interval, proportion_interval

__all__ = [
    "LOOKS",
    "RepeatedLooks",
    "binary_looks",
    "categorical_looks",
    "look_ends",
    "looks_line",
    "numeric_looks",
    "running_sums",
]

LOOKS = 100
"""Looks per simulated survey: after every ⌈n/100⌉ reports, and at the end."""

Bounds = tuple[NDArray[np.float64], NDArray[np.float64]]


@dataclass(frozen=True)
class RepeatedLooks:
    """Each repeat looked at during collection, as a live dashboard would.

    Attributes:
        looks: looks per repeat.
        every: reports between looks.
        anytime_ever_missed: share of repeats in which the anytime interval (confidence
            sequence) missed the truth at some look; at most 1 − confidence in expectation.
        fixed_ever_missed: the same for the fixed-n interval, which is valid at one
            planned look only.
    """

    looks: int
    every: int
    anytime_ever_missed: float
    fixed_ever_missed: float


def looks_line(
    looks: RepeatedLooks | None, confidence: float, subject: str = "the interval"
) -> str:
    """One line for ``simulate``: how often each interval ever missed during collection."""
    if looks is None:
        return ""
    return (
        f"  looked at every {looks.every:,} reports ({looks.looks} looks): {subject} ever "
        f"missed the truth in {looks.anytime_ever_missed:.4f} of repeats with --anytime "
        f"(confidence sequence; at most {1 - confidence:.4g}), "
        f"{looks.fixed_ever_missed:.4f} with the fixed-n interval"
    )


def look_ends(n: int) -> NDArray[np.int64]:
    """Report counts at which a repeat is looked at: every ⌈n/LOOKS⌉ reports, and n."""
    every = max(1, math.ceil(n / LOOKS))
    return np.unique(np.append(np.arange(every, n + 1, every), n)).astype(np.int64)


def running_sums(values: ArrayLike, ends: NDArray[np.int64]) -> NDArray[np.float64]:
    """Sums of the first ``ends[j]`` values (rows), one row per look."""
    return np.cumsum(np.asarray(values, dtype=np.float64), axis=0)[ends - 1]


def _unique(interval: Callable[[NDArray[np.float64], NDArray[np.float64]], Bounds],
            counts: NDArray[np.float64], n: NDArray[np.float64]) -> Bounds:  # fmt: skip
    """``interval`` once per distinct (count, n) pair: repeats share most of them."""
    c, m = np.broadcast_arrays(counts, n)
    pairs, inverse = np.unique(np.stack([c.ravel(), m.ravel()], 1), axis=0, return_inverse=True)
    low, high = interval(pairs[:, 0], pairs[:, 1])
    return low.ravel()[inverse].reshape(c.shape), high.ravel()[inverse].reshape(c.shape)


def _missed(bounds: Bounds, truth: ArrayLike) -> float:
    """Share of repeats (first axis) whose interval missed ``truth`` at some look (second).

    With options (a third axis), the largest such share over the options.
    """
    low, high = bounds
    target = np.asarray(truth, dtype=np.float64)
    missed = (low > target) | (high < target)
    return float(np.max(np.mean(missed.any(axis=1), axis=0)))


def _result(ends: NDArray[np.int64], anytime: float, fixed: float) -> RepeatedLooks:
    return RepeatedLooks(int(ends.size), int(ends[0]), anytime, fixed)


def binary_looks(
    spec: BinaryRates, ones: NDArray[np.float64], ends: NDArray[np.int64],
    share: float, confidence: float, method: str,
) -> RepeatedLooks:  # fmt: skip
    """Yes-counts ``ones`` (repeats × looks) at ``ends``: the yes-share's intervals at each."""
    anytime = _unique(
        lambda y, n: proportion_interval(spec, y, n, confidence), ones, ends.astype(np.float64)
    )
    fixed = [proportion_arrays(ones[:, j], int(m), spec, confidence, method, "population")
             for j, m in enumerate(ends.tolist())]  # fmt: skip
    stacked = (
        np.stack([f["ci_low"] for f in fixed], 1),
        np.stack([f["ci_high"] for f in fixed], 1),
    )
    return _result(ends, _missed(anytime, share), _missed(stacked, share))


def categorical_looks(
    spec: FrequencyOracle, counts: NDArray[np.float64], ends: NDArray[np.int64],
    shares: ArrayLike, confidence: float, method: str,
) -> RepeatedLooks:  # fmt: skip
    """Support counts (repeats × looks × k) at ``ends``: each option's intervals at each.

    The figures are the largest over the options, each option's interval taken alone.
    """
    anytime = _unique(
        lambda y, n: frequency_interval(spec, y[:, None], n, confidence, False),
        counts, ends[:, None].astype(np.float64),
    )  # fmt: skip
    fixed = [frequency_arrays(counts[:, j], int(m), spec, confidence, method, "population")
             for j, m in enumerate(ends.tolist())]  # fmt: skip
    stacked = (
        np.stack([f["ci_low"] for f in fixed], 1),
        np.stack([f["ci_high"] for f in fixed], 1),
    )
    return _result(ends, _missed(anytime, shares), _missed(stacked, shares))


def numeric_looks(
    spec: NumericMechanism, sums: NDArray[np.float64], squares: NDArray[np.float64],
    ends: NDArray[np.int64], truth: float, confidence: float,
) -> RepeatedLooks:  # fmt: skip
    """Running Σy and Σy² (repeats × looks, normalized scale): the mean's intervals at each."""
    from scipy import stats

    target = spec.normalize(truth)
    mean = sums / ends
    anytime = spec.anytime_mean_interval(ends, mean, confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.sqrt(np.maximum(squares - sums * mean, 0.0) / (ends - 1))
        half = stats.t.isf((1.0 - confidence) / 2.0, ends - 1) * spread / np.sqrt(ends)
    half = np.where(ends > 1, half, np.inf)  # one report: the whole range
    return _result(ends, _missed(anytime, target), _missed((mean - half, mean + half), target))
