"""Multi-select estimates: item shares, the co-occurrence matrix and conditional shares."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms._rates import ItemRates
from deniable.shared.mechanisms._tally import Tally
from deniable.shared.stats import (
    RATE_METHOD,
    anytime_rate_interval,
    binomial_interval,
    check_method,
    normal_quantile,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "ConditionalShare",
    "MultiSelectEstimate",
    "estimate_conditional",
    "estimate_multi_select",
    "flip_rates",
    "pair_index",
    "split_tally",
]

PAIR_METHOD = "wald"
"""The pair and conditional intervals: normal approximation with a plug-in variance."""


def pair_index(k: int, i: int, j: int) -> int:
    """Position of the pair (i, j), i < j, among the k(k−1)/2 pair counts (row by row).

    Example:
        >>> [pair_index(4, i, j) for i in range(4) for j in range(i + 1, 4)]
        [0, 1, 2, 3, 4, 5]
    """
    return i * (2 * k - i - 1) // 2 + (j - i - 1)


def flip_rates(mechanism: ItemRates) -> tuple[float, float, float]:
    """(q, 1 − 2q, V = q(1−q)/(1−2q)²): the flip rate, the gap and a debiased bit's variance.

    The gap is how much a chosen item raises its bit's chance of being reported; V is the
    variance of one debiased bit d = (y − q)/(1 − 2q), whatever the truth.
    """
    q = mechanism.q
    gap = 1.0 - 2.0 * q
    return q, gap, q * (1.0 - q) / gap**2


def split_tally(tally: Tally, k: int) -> tuple[int, NDArray[np.int64], NDArray[np.int64]]:
    """(n, item counts C_i, the k×k matrix of pair counts C_ij with C_ii = C_i).

    Raises:
        ValueError: a count outside [0, n], or a pair count above either item's count.
    """
    n = as_count("n", tally.n, minimum=1)
    pairs = k * (k - 1) // 2
    sums = np.zeros(k + pairs, dtype=np.int64)
    if len(tally.sums) > k + pairs:
        raise ValueError(f"tally has {len(tally.sums)} sums, expected {k + pairs} for k={k}")
    sums[: len(tally.sums)] = tally.sums
    if np.any(sums < 0) or np.any(sums > n):
        bad = int(np.flatnonzero((sums < 0) | (sums > n))[0])
        raise ValueError(f"tally sum {bad} is {int(sums[bad])}, outside [0, n={n}]")
    counts = sums[:k]
    matrix = np.diag(counts).astype(np.int64)
    upper = np.triu_indices(k, 1)
    matrix[upper] = sums[k:]
    matrix = matrix + np.triu(matrix, 1).T
    if np.any(matrix > np.minimum.outer(counts, counts)):
        raise ValueError("tally has a pair count above one of its items' counts")
    return n, counts, matrix


@dataclass(frozen=True)
class ConditionalShare:
    """Among participants who chose item ``given``, the share who also chose ``item``.

    r = f_gi/f_g, estimated by the ratio of the unbiased estimates; its variance by the
    delta method, Var(r̂) ≈ Var(Z − rW)/(n f_g²) with Z = d_g·d_i and W = d_g per
    participant (d the debiased bits), plug-in estimates for the unknowns (each clipped to
    [0, 1]). Undefined (``defined`` False, interval [0, 1]) when f̂_g <= 0.
    """

    given: int
    item: int
    estimate: float
    estimate_raw: float
    ci_low: float
    ci_high: float
    std_error: float
    defined: bool

    def wire(self, names: list[str]) -> pb.ConditionalEstimate:
        """The ``ConditionalEstimate`` message, items named as in the question."""
        return pb.ConditionalEstimate(
            given=names[self.given],
            item=names[self.item],
            estimate=self.estimate,
            estimate_raw=self.estimate_raw,
            ci_low=self.ci_low,
            ci_high=self.ci_high,
            std_error=self.std_error,
            defined=self.defined,
        )


@dataclass(frozen=True)
class MultiSelectEstimate:
    """Each item's share and the share choosing each pair of items, with intervals.

    Tuples are per item (length k) or k×k matrices (tuples of rows, symmetric, with the
    item shares on the diagonal).

    Attributes:
        n: number of reports.
        k: number of items.
        estimate, estimate_raw, std_error, ci_low, ci_high: per item. Raw f̂_i =
            (C_i/n − q)/(1 − 2q), unbiased; ``estimate`` clips it to [0, 1]. The interval is
            the binomial interval ``method`` for C_i/n mapped through the same map (exact
            coverage for i.i.d. participants, as for a yes/no question).
        item_counts: C_i, the reports with item i's bit set.
        pair_estimate, pair_estimate_raw, pair_std_error, pair_ci_low, pair_ci_high: the
            co-occurrence matrix: f̂_ij = (C_ij − q(C_i + C_j) + nq²)/(n(1 − 2q)²), the mean
            of d_i·d_j (unbiased), clipped to [0, 1]; normal intervals with the plug-in
            variance [v² + v(f_i + f_j) + f_ij(1 − f_ij)]/n, v = q(1−q)/(1−2q)².
        pair_counts: C_ij, the reports with both bits set (C_ii = C_i).
    """

    n: int
    k: int
    estimate: tuple[float, ...]
    estimate_raw: tuple[float, ...]
    std_error: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    item_counts: tuple[int, ...]
    pair_estimate: tuple[tuple[float, ...], ...]
    pair_estimate_raw: tuple[tuple[float, ...], ...]
    pair_std_error: tuple[tuple[float, ...], ...]
    pair_ci_low: tuple[tuple[float, ...], ...]
    pair_ci_high: tuple[tuple[float, ...], ...]
    pair_counts: tuple[tuple[int, ...], ...]
    method: str
    confidence: float
    estimand: str
    mechanism: str
    epsilon: float
    coverage: str
    simultaneous: bool = False
    anytime: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples become lists)."""
        return {
            name: _lists(value) if isinstance(value, tuple) else value
            for name, value in asdict(self).items()
        }

    def wire_fields(self, question: pb.Question) -> dict[str, Any]:
        """``Estimate`` fields: ``items`` (one per item) and ``pairs`` (i < j)."""
        names = list(question.multi_select.items) or [str(v) for v in range(self.k)]
        items = [
            pb.OptionEstimate(
                option=name,
                estimate=self.estimate[i],
                estimate_raw=self.estimate_raw[i],
                ci_low=self.ci_low[i],
                ci_high=self.ci_high[i],
                std_error=self.std_error[i],
                support=self.item_counts[i],
            )
            for i, name in enumerate(names)
        ]
        pairs = [
            pb.PairEstimate(
                first=names[i],
                second=names[j],
                estimate=self.pair_estimate[i][j],
                estimate_raw=self.pair_estimate_raw[i][j],
                ci_low=self.pair_ci_low[i][j],
                ci_high=self.pair_ci_high[i][j],
                std_error=self.pair_std_error[i][j],
                support=self.pair_counts[i][j],
            )
            for i in range(self.k)
            for j in range(i + 1, self.k)
        ]
        return {
            "n": self.n,
            "confidence": self.confidence,
            "method": self.method,
            "estimand": self.estimand,
            "epsilon": self.epsilon,
            "mechanism": self.mechanism,
            "coverage": self.coverage,
            "simultaneous": self.simultaneous,
            "anytime": self.anytime,
            "items": items,
            "pairs": pairs,
        }


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


def _rows(array: NDArray[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(row) for row in array.tolist())


def multi_select_coverage(k: int, simultaneous: bool, anytime: bool) -> str:
    """What the intervals promise, in words (``Estimate.coverage``)."""
    if anytime:
        items = "item shares: anytime-valid confidence sequences, per item"
    elif simultaneous:
        items = f"item shares: simultaneous over {k} items (Bonferroni, each at 1 - (1 - C)/{k})"
    else:
        items = "item shares: per item (exact binomial coverage for the method)"
    return (
        f"{items}; pairs: per pair, fixed n, normal approximation with a plug-in variance "
        "(not simultaneous)"
    )


def pair_arrays(
    mechanism: ItemRates,
    n: int,
    counts: NDArray[np.int64],
    matrix: NDArray[np.int64],
    z: float,
) -> dict[str, NDArray[np.float64]]:
    """Vectorized co-occurrence estimates (unvalidated); ``counts`` on the last axis.

    ``counts`` has shape (..., k) and ``matrix`` (..., k, k); every result (..., k, k). The
    diagonal is each item's own share (its Wald interval: the shown item intervals are
    the binomial ones of :func:`estimate_multi_select`).
    """
    q, g, v = flip_rates(mechanism)
    c = counts.astype(np.float64)
    raw = (matrix - q * (c[..., :, None] + c[..., None, :]) + n * q * q) / (n * g * g)
    diagonal = (c / n - q) / g
    k = counts.shape[-1]
    eye = np.eye(k, dtype=bool)
    raw = np.where(eye, diagonal[..., :, None], raw)
    f = np.clip(diagonal, 0.0, 1.0)
    fij = np.clip(raw, 0.0, 1.0)
    off = (v * v + v * (f[..., :, None] + f[..., None, :]) + fij * (1.0 - fij)) / n
    on = (v + f * (1.0 - f)) / n
    variance = np.where(eye, on[..., :, None], off)
    se = np.sqrt(variance)
    return {
        "estimate": fij,
        "estimate_raw": raw,
        "std_error": se,
        "ci_low": np.clip(np.minimum(raw - z * se, fij), 0.0, 1.0),
        "ci_high": np.clip(np.maximum(raw + z * se, fij), 0.0, 1.0),
    }


def item_arrays(
    mechanism: ItemRates,
    n: int,
    counts: NDArray[np.int64],
    confidence: float,
    method: str,
    *,
    simultaneous: bool = False,
    anytime: bool = False,
) -> dict[str, NDArray[np.float64]]:
    """Vectorized item-share estimates (unvalidated); ``counts`` has the k items last.

    Each count is C_i ~ Binomial(n, λ_i), λ_i = q + f_i(1 − 2q), for i.i.d. participants;
    the interval for λ_i (``method``, or the anytime confidence sequence) maps to f_i
    through the increasing f = (λ − q)/(1 − 2q), clipped to [0, 1], then widened to contain
    the clipped estimate.
    """
    q, g, v = flip_rates(mechanism)
    c = counts.astype(np.float64)
    k = counts.shape[-1]
    raw = (c / n - q) / g
    shown = np.clip(raw, 0.0, 1.0)
    level = 1.0 - (1.0 - confidence) / k if simultaneous else confidence
    if anytime:
        lam_low, lam_high = anytime_rate_interval(c, n, level)
    else:
        lam_low, lam_high = binomial_interval(c, n, level, method)
    low = np.clip((lam_low - q) / g, 0.0, 1.0)
    high = np.clip((lam_high - q) / g, 0.0, 1.0)
    return {
        "estimate": shown,
        "estimate_raw": raw,
        "std_error": np.sqrt((v + shown * (1.0 - shown)) / n),
        "ci_low": np.minimum(low, shown),
        "ci_high": np.maximum(high, shown),
    }


def estimate_multi_select(
    mechanism: ItemRates,
    tally: Tally,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    *,
    simultaneous: bool = False,
    anytime: bool = False,
) -> MultiSelectEstimate:
    """Item shares (binomial intervals) and the co-occurrence matrix (normal intervals).

    Raises:
        ValueError: an invalid confidence, method or tally (named).
    """
    level = check_confidence(confidence)
    check_method(method)
    k = mechanism.k
    n, counts, matrix = split_tally(tally, k)
    items = item_arrays(
        mechanism, n, counts, level, method, simultaneous=simultaneous, anytime=anytime
    )
    pairs = pair_arrays(mechanism, n, counts, matrix, normal_quantile(level))
    return MultiSelectEstimate(
        n=n,
        k=k,
        estimate=tuple(items["estimate"].tolist()),
        estimate_raw=tuple(items["estimate_raw"].tolist()),
        std_error=tuple(items["std_error"].tolist()),
        ci_low=tuple(items["ci_low"].tolist()),
        ci_high=tuple(items["ci_high"].tolist()),
        item_counts=tuple(int(c) for c in counts.tolist()),
        pair_estimate=_rows(pairs["estimate"]),
        pair_estimate_raw=_rows(pairs["estimate_raw"]),
        pair_std_error=_rows(pairs["std_error"]),
        pair_ci_low=_rows(pairs["ci_low"]),
        pair_ci_high=_rows(pairs["ci_high"]),
        pair_counts=_rows(matrix),
        method=RATE_METHOD if anytime else method,
        confidence=level,
        estimand="population",
        mechanism=mechanism.name,
        epsilon=mechanism.epsilon,
        coverage=multi_select_coverage(k, simultaneous, anytime),
        simultaneous=bool(simultaneous),
        anytime=bool(anytime),
    )


def conditional_arrays(
    mechanism: ItemRates,
    n: int,
    c_given: Any,
    c_item: Any,
    c_both: Any,
    z: float,
) -> dict[str, Any]:
    """Vectorized conditional share (unvalidated): counts broadcast against each other."""
    q, g, v = flip_rates(mechanism)
    fg = (np.asarray(c_given, dtype=np.float64) / n - q) / g
    fi = (np.asarray(c_item, dtype=np.float64) / n - q) / g
    fgi = (c_both - q * (np.asarray(c_given) + c_item) + n * q * q) / (n * g * g)
    defined = fg > 0
    safe = np.where(defined, fg, 1.0)
    ratio = np.where(defined, fgi / safe, 0.0)
    r = np.clip(ratio, 0.0, 1.0)
    pg, pi, pgi = (np.clip(x, 0.0, 1.0) for x in (fg, fi, fgi))
    var_z = v * v + v * (pg + pi) + pgi * (1.0 - pgi)
    cov = v * pi + pgi * (1.0 - pg)
    var_w = v + pg * (1.0 - pg)
    spread = np.maximum(var_z - 2.0 * r * cov + r * r * var_w, 0.0)
    se = np.where(defined, np.sqrt(spread / n) / safe, np.inf)
    return {
        "estimate": r,
        "estimate_raw": ratio,
        "std_error": se,
        "ci_low": np.where(defined, np.clip(np.minimum(ratio - z * se, r), 0.0, 1.0), 0.0),
        "ci_high": np.where(defined, np.clip(np.maximum(ratio + z * se, r), 0.0, 1.0), 1.0),
        "defined": defined,
    }


def estimate_conditional(
    mechanism: ItemRates,
    tally: Tally,
    given: int,
    item: int,
    confidence: float = 0.95,
) -> ConditionalShare:
    """Among those who chose ``given``, the share who chose ``item`` (:class:`ConditionalShare`).

    Raises:
        ValueError: an item index outside [0, k), the same item twice, or a bad tally.
    """
    k = mechanism.k
    for name, index in (("given", given), ("item", item)):
        if not 0 <= index < k:
            raise ValueError(f"{name} must be an item index in [0, {k}), got {index!r}")
    if given == item:
        raise ValueError(f"given and item must be two different items, got {given} twice")
    level = check_confidence(confidence)
    n, counts, matrix = split_tally(tally, k)
    arrays = conditional_arrays(
        mechanism,
        n,
        counts[given],
        counts[item],
        matrix[given, item],
        normal_quantile(level),
    )
    se = float(arrays["std_error"])
    return ConditionalShare(
        given=given,
        item=item,
        estimate=float(arrays["estimate"]),
        estimate_raw=float(arrays["estimate_raw"]),
        ci_low=float(arrays["ci_low"]),
        ci_high=float(arrays["ci_high"]),
        std_error=se if math.isfinite(se) else 0.0,
        defined=bool(arrays["defined"]),
    )
