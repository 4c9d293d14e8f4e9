"""Synthetic tables sampled from a survey's estimates: post-processing, at no privacy cost."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "INDEPENDENCE",
    "MAX_FITTED_ITEMS",
    "MAX_ROWS",
    "PRIVACY",
    "Column",
    "QuestionSampler",
    "SynthesisPlan",
    "fit_max_entropy",
    "max_entropy_rate",
    "numbers",
    "sample_max_entropy",
    "shares_of",
    "single_column",
]

MAX_ROWS = 10_000_000
"""Most rows one synthetic table may have."""
MAX_FITTED_ITEMS = 12
"""Most items of a multi-select question whose 2^k sets are fitted (more: independent items)."""
FIT_SWEEPS = 500
"""Most sweeps of iterative proportional fitting over a multi-select question's pairs."""
FIT_TOLERANCE = 1e-10
"""The fit stops when every item share and pair co-occurrence is this close to its target."""
FEASIBLE_GAP = 1e-3
"""A fit that ends farther than this from a target found the targets infeasible together
(targets on the edge of the feasible set converge slowly, to about 1e-4 in the sweeps given;
far below any estimate's sampling error)."""
SHRINKS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)
"""Shrinkages of the pair targets toward independence tried in turn (1: independence)."""

PRIVACY = (
    "post-processing: every row is sampled from the released estimates only, so the table "
    "costs no privacy beyond the survey's epsilon, and no row is any participant's answer"
)
INDEPENDENCE = (
    "columns of different questions are sampled independently: only the relationships "
    "within one joint question (between its parts) and one multi-select question (between "
    "its items) are reproduced; any other relationship in the table is chance"
)

Draw = Callable[[np.random.Generator, int], list[list[str]]]
"""Sample n rows of a question's columns: one list of n values per column."""


@dataclass(frozen=True)
class Column:
    """One column of the synthetic table: its name, its question and how it is sampled."""

    name: str
    question_id: str
    method: str


@dataclass(frozen=True)
class QuestionSampler:
    """A question's columns, what was done to its estimate to sample it, and its sampler."""

    question_id: str
    columns: tuple[Column, ...]
    notes: tuple[str, ...]
    draw: Draw


@dataclass(frozen=True)
class SynthesisPlan:
    """Every question's sampler, in the survey's order; ``rows`` samples the table."""

    samplers: tuple[QuestionSampler, ...]

    @property
    def columns(self) -> tuple[Column, ...]:
        """Every column, question by question."""
        return tuple(column for sampler in self.samplers for column in sampler.columns)

    @property
    def notes(self) -> tuple[str, ...]:
        """Each question's notes, prefixed with its id."""
        return tuple(f"{s.question_id}: {note}" for s in self.samplers for note in s.notes)

    def rows(
        self, rng: np.random.Generator, count: int, chunk: int = 100_000
    ) -> Iterator[list[str]]:
        """``count`` rows, sampled ``chunk`` rows at a time (memory stays bounded)."""
        if not 1 <= count <= MAX_ROWS:
            raise ValueError(f"rows must be 1..{MAX_ROWS:,}, got {count}")
        done = 0
        while done < count:
            n = min(chunk, count - done)
            columns = [values for sampler in self.samplers for values in sampler.draw(rng, n)]
            yield from (list(row) for row in zip(*columns, strict=True))
            done += n


def shares_of(values: Sequence[float], expected: int, question: pb.Question) -> NDArray[np.float64]:
    """Shares clipped to [0, 1] and scaled to sum to 1 (projected estimates already do)."""
    if len(values) != expected:
        raise ValueError(
            f"question {question.id!r}: its estimate has {len(values)} shares, its domain "
            f"{expected}"
        )
    shares = np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0)
    total = float(shares.sum())
    if total <= 0.0:
        raise ValueError(f"question {question.id!r}: its estimated shares sum to 0")
    return shares / total


def numbers(values: NDArray[np.float64]) -> list[str]:
    """Numbers as CSV text, to full precision."""
    return [repr(v) for v in values.tolist()]


def max_entropy_rate(t: float) -> float:
    """The rate λ of the density ∝ exp(λu) on [0, 1] whose mean is ``t`` (0 < t < 1).

    The maximum-entropy distribution on an interval with a given mean: a truncated
    exponential; λ = 0 (uniform) at t = 1/2, and λ(1 − t) = −λ(t).

    Example:
        >>> max_entropy_rate(0.5)
        0.0
        >>> round(max_entropy_rate(0.75), 6) == -round(max_entropy_rate(0.25), 6)
        True
    """
    if not 0.0 < t < 1.0:
        raise ValueError(f"mean must be strictly inside (0, 1), got {t!r}")
    if abs(t - 0.5) < 1e-12:
        return 0.0
    if t < 0.5:
        return -max_entropy_rate(1.0 - t)

    def mean(rate: float) -> float:  # 1/(1 − e^−λ) − 1/λ, increasing from 1/2 (λ → 0) to 1
        return -1.0 / math.expm1(-rate) - 1.0 / rate

    low, high = 1e-9, 1.0 / (1.0 - t) + 1.0  # mean(1/(1 − t) + 1) > t
    for _ in range(200):  # bisection: the mean is increasing in λ
        middle = (low + high) / 2.0
        if mean(middle) < t:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def sample_max_entropy(
    lo: float, hi: float, mean: float, rng: np.random.Generator, n: int
) -> NDArray[np.float64]:
    """``n`` draws from the maximum-entropy distribution on [lo, hi] with that mean.

    A mean at a bound (the clipped estimate can be) leaves one point: every draw is it.
    """
    t = (mean - lo) / (hi - lo)
    if t <= 0.0 or t >= 1.0:
        return np.full(n, lo if t <= 0.0 else hi, dtype=np.float64)
    rate = max_entropy_rate(t)
    u = 1.0 - rng.random(n)  # (0, 1]
    if rate == 0.0:
        x = u
    else:
        # Inverse of the CDF (e^{λx} − 1)/(e^λ − 1), written to not overflow for large |λ|.
        steep = abs(rate)
        x = 1.0 + np.log(u + (1.0 - u) * math.exp(-steep)) / steep
        if rate < 0.0:
            x = 1.0 - x
    return np.asarray(lo + (hi - lo) * np.clip(x, 0.0, 1.0), dtype=np.float64)


def fit_max_entropy(
    items: Sequence[float], pairs: Sequence[Sequence[float]]
) -> tuple[NDArray[np.float64], int, float, float]:
    """The maximum-entropy distribution over the 2^k sets with these item and pair shares.

    ``items[i]`` is the share choosing item i, ``pairs[i][j]`` (i < j) the share choosing
    both. Targets are first clipped to what is feasible pair by pair: items to [0, 1], each
    pair to its Fréchet bounds [max(0, pᵢ + pⱼ − 1), min(pᵢ, pⱼ)]. Iterative proportional
    fitting from the uniform distribution then matches each pair's four cells in turn (which
    matches the items too); its limit is the maximum-entropy distribution with those shares.
    Pairs feasible one by one may not be together (a = b, b = c but a ≠ c): then the pair
    targets are shrunk toward independence (pᵢpⱼ, always feasible) by the least of
    ``SHRINKS`` that the fit reaches.

    Returns the probability of each set (bit i of the index: item i chosen), how many pair
    targets were clipped, the shrinkage used (0: none) and the largest remaining gap
    between a fitted share and its target.
    """
    k = len(items)
    if not 2 <= k <= MAX_FITTED_ITEMS:
        raise ValueError(f"items: fit 2..{MAX_FITTED_ITEMS} items, got {k}")
    p = np.clip(np.asarray(items, dtype=np.float64), 0.0, 1.0)
    bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
    index = list(itertools.combinations(range(k), 2))
    bounded = []
    for i, j in index:
        both = float(pairs[i][j])
        bounded.append(min(min(p[i], p[j]), max(max(0.0, p[i] + p[j] - 1.0), both)))
    clipped = sum(int(b != float(pairs[i][j])) for b, (i, j) in zip(bounded, index, strict=True))
    # The set's cell of each pair: 0 neither, 1 only j, 2 only i, 3 both.
    cells = [2 * bits[:, i] + bits[:, j] for i, j in index]
    probs, gap, shrink = np.full(2**k, 1.0 / 2**k), math.inf, 0.0
    for shrink in SHRINKS:
        targets = []
        for both, (i, j) in zip(bounded, index, strict=True):
            both = (1.0 - shrink) * both + shrink * p[i] * p[j]
            shares = (1.0 - p[i] - p[j] + both, p[j] - both, p[i] - both, both)
            targets.append(np.maximum(0.0, np.asarray(shares, dtype=np.float64)))
        probs, gap = _fit(2**k, cells, targets)
        if gap <= FEASIBLE_GAP:
            break
    return probs, clipped, shrink, gap


def _fit(
    size: int, cells: list[NDArray[np.int64]], targets: list[NDArray[np.float64]]
) -> tuple[NDArray[np.float64], float]:
    """Iterative proportional fitting of each pair's four cells; the fit and its gap."""
    probs = np.full(size, 1.0 / size)
    gap = math.inf
    for _ in range(FIT_SWEEPS):
        gap = 0.0
        for cell, shares in zip(cells, targets, strict=True):
            mass = np.bincount(cell, weights=probs, minlength=4)
            gap = max(gap, float(np.abs(mass - shares).max()))
            factor = np.divide(shares, mass, out=np.ones(4), where=mass > 0.0)
            probs *= factor[cell]
        total = float(probs.sum())
        if not total > 0.0:  # contradictory zero targets emptied every set
            return np.full(size, 1.0 / size), math.inf
        probs /= total
        if gap <= FIT_TOLERANCE:
            break
    return probs, gap


def single_column(question: pb.Question, method: str, draw: Draw) -> QuestionSampler:
    """The sampler of a question that makes one column, named by the question's id."""
    return QuestionSampler(question.id, (Column(question.id, question.id, method),), (), draw)
