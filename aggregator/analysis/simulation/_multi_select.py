"""Simulated multi-select surveys: true sets from a stated distribution, interval coverage."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.simulation._binary import check_spec_type
from deniable.aggregator.analysis.simulation._grpc import GrpcTransport
from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms import ItemRandomizedResponse, Tally
from deniable.shared.mechanisms._item_estimate import (
    conditional_arrays,
    item_arrays,
    pair_arrays,
)
from deniable.shared.questions import MULTI_SELECT, NONE_ANSWER
from deniable.shared.stats import check_method, normal_quantile

__all__ = [
    "MultiSelectGrpcSubmitter",
    "MultiSelectSimulation",
    "SetDistribution",
    "simulate_multi_select",
]

MAX_SETS = 256
"""Most distinct sets a simulated distribution may list."""


@dataclass(frozen=True)
class SetDistribution:
    """A distribution over a few listed sets of items: each set (a mask) and its probability.

    Written ``apples+pears:0.3,apples:0.2,none:0.5``: sets of item names joined by ``+``
    (``none`` for the empty set), each with its probability; the probabilities are
    non-negative and sum to 1 (within 1e-9). Any correlation between items is one such
    distribution.
    """

    sets: tuple[int, ...]
    probabilities: tuple[float, ...]

    @classmethod
    def parse(cls, text: str, names: Sequence[str]) -> SetDistribution:
        """Parse ``SET:P,SET:P,...`` over the items ``names``.

        Raises:
            ValueError: a malformed entry, an unknown item, a set listed twice, a bad
                probability or probabilities that do not sum to 1 (each named).
        """
        lowered = [name.lower() for name in names]
        sets: list[int] = []
        probabilities: list[float] = []
        entries = [entry.strip() for entry in text.split(",")]
        if not text.strip() or len(entries) > MAX_SETS:
            raise ValueError(f"--distribution must list 1..{MAX_SETS} sets as SET:P, got {text!r}")
        for entry in entries:
            chosen, colon, share = entry.rpartition(":")
            if not colon:
                raise ValueError(f"--distribution entry {entry!r} must be SET:P (e.g. a+b:0.3)")
            mask = 0
            if chosen.strip().lower() != NONE_ANSWER:
                for item in chosen.split("+"):
                    if item.strip().lower() not in lowered:
                        raise ValueError(
                            f"--distribution entry {entry!r}: {item.strip()!r} is not an item "
                            f"(items: {', '.join(names)})"
                        )
                    mask |= 1 << lowered.index(item.strip().lower())
            if mask in sets:
                raise ValueError(f"--distribution entry {entry!r}: that set is listed twice")
            try:
                probability = float(share)
            except ValueError:
                raise ValueError(
                    f"--distribution entry {entry!r}: {share!r} is not a probability"
                ) from None
            if not 0.0 <= probability <= 1.0:
                raise ValueError(
                    f"--distribution entry {entry!r}: probability must be in [0, 1], "
                    f"got {probability!r}"
                )
            sets.append(mask)
            probabilities.append(probability)
        total = math.fsum(probabilities)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"--distribution probabilities must sum to 1, got {total!r}")
        return cls(tuple(sets), tuple(p / total for p in probabilities))

    def indicators(self, k: int) -> NDArray[np.float64]:
        """One row of k indicator bits per listed set."""
        masks = np.asarray(self.sets, dtype=np.int64)[:, None]
        return ((masks >> np.arange(k)) & 1).astype(np.float64)

    def pair_shares(self, k: int) -> NDArray[np.float64]:
        """The true k×k co-occurrence matrix (share choosing both; diagonal: item shares)."""
        x = self.indicators(k)
        return np.asarray((x.T * np.asarray(self.probabilities)) @ x, dtype=np.float64)

    def draw(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Draw n i.i.d. true sets (masks)."""
        picks = rng.choice(len(self.sets), size=n, p=np.asarray(self.probabilities))
        return np.asarray(self.sets, dtype=np.int64)[picks]


@dataclass
class MultiSelectGrpcSubmitter(GrpcTransport):
    """Multi-select questions: submits the bits; returns the daemon's tally, read back."""

    def __call__(self, reports: Any) -> Tally:
        """Create a survey, submit ``reports``, and rebuild the tally from its estimate.

        The estimate's item and pair supports are the tally's sums (item counts, then
        pair counts for i < j in order).
        """
        estimate = self.exchange(reports)
        sums = [int(item.support) for item in estimate.items]
        sums += [int(pair.support) for pair in estimate.pairs]
        return Tally(int(estimate.n), tuple(sums))


@dataclass(frozen=True)
class MultiSelectSimulation:
    """What ``simulate --type multi_select`` measured.

    Matrices are k×k (item i, item j); for the conditional share the row is the item given
    and the column the item whose share is estimated (diagonal: None). Coverage is the
    share of repeats whose interval contained the truth, with its Monte Carlo standard
    error sqrt(c(1−c)/R); None with one repeat (or where the conditional share is
    undefined: nobody chooses the given item).
    """

    participants: int
    repeats: int
    items: tuple[str, ...]
    randomness: str
    transport: str
    seed: int | None
    mechanism: dict[str, Any]
    confidence: float
    method: str
    distribution: dict[str, float]
    true_pairs: tuple[tuple[float, ...], ...]
    first: dict[str, Any]
    item_coverage: tuple[float | None, ...]
    pair_coverage: tuple[tuple[float | None, ...], ...]
    conditional_coverage: tuple[tuple[float | None, ...], ...]
    reports_per_second: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {name: _lists(getattr(self, name)) for name in self.__dataclass_fields__}


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


def simulate_multi_select(
    participants: int,
    distribution: SetDistribution,
    spec: ItemRandomizedResponse,
    *,
    items: Sequence[str],
    repeats: int = 1,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
    submit: MultiSelectGrpcSubmitter | None = None,
) -> MultiSelectSimulation:
    """Simulate ``repeats`` surveys of ``participants`` people each choosing a set of items.

    True sets are drawn i.i.d. from ``distribution``; each is perturbed with ``spec`` (OS
    CSPRNG unless ``seed``) and tallied; item shares, the co-occurrence matrix and every
    conditional share are estimated from the tally with the aggregator's estimators, and
    each interval is checked against the truth. With ``submit`` each repeat's reports also
    go to an aggregator, whose tally (read back from its estimate) must equal the local one.

    Raises:
        ValueError: invalid participants, repeats, confidence or method (named).
        TypeError: ``spec`` is not a multi-select mechanism.
        RuntimeError: the aggregator's tally differs from the reports sent.
    """
    check_spec_type(spec, MULTI_SELECT)
    n = as_count("participants", participants, minimum=1)
    runs = as_count("repeats", repeats, minimum=1)
    level = check_confidence(confidence)
    check_method(method)
    k = spec.k
    names = tuple(items)
    rng = np.random.default_rng(seed)
    perturb_rng = rng if seed is not None else None
    truth = distribution.pair_shares(k)
    shares = np.diagonal(truth)
    counts = np.empty((runs, k), dtype=np.int64)
    matrices = np.empty((runs, k, k), dtype=np.int64)
    started = time.perf_counter()
    for run in range(runs):
        reports = spec.perturb_many(distribution.draw(n, rng), perturb_rng)
        tally = Tally(n, tuple(spec.tally(reports)))
        if submit is not None:
            remote = submit(reports)
            if remote != tally:
                raise RuntimeError(
                    f"the aggregator's tally {remote} differs from the reports sent {tally}"
                )
        bits = reports.astype(np.int64)
        together = bits.T @ bits
        counts[run], matrices[run] = np.diagonal(together), together
        if progress is not None:
            progress(1)
    elapsed = time.perf_counter() - started
    z = normal_quantile(level)
    items_ = item_arrays(spec, n, counts, level, method)
    pairs = pair_arrays(spec, n, counts, matrices, z)
    item_hits = (items_["ci_low"] <= shares) & (shares <= items_["ci_high"])
    pair_hits = (pairs["ci_low"] <= truth) & (truth <= pairs["ci_high"])
    given = counts[:, :, None]
    other = counts[:, None, :]
    conditional = conditional_arrays(spec, n, given, other, matrices, z)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(shares[:, None] > 0, truth / shares[:, None], np.nan)
    conditional_hits = (conditional["ci_low"] <= ratio) & (ratio <= conditional["ci_high"])

    def rate(hits: NDArray[np.bool_], defined: bool = True) -> float | None:
        return float(hits.mean()) if runs > 1 and defined else None

    first = {
        "n": n,
        "estimate": items_["estimate"][0].tolist(),
        "ci_low": items_["ci_low"][0].tolist(),
        "ci_high": items_["ci_high"][0].tolist(),
        "pair_estimate": pairs["estimate"][0].tolist(),
        "pair_ci_low": pairs["ci_low"][0].tolist(),
        "pair_ci_high": pairs["ci_high"][0].tolist(),
    }
    return MultiSelectSimulation(
        participants=n,
        repeats=runs,
        items=names,
        randomness="os-csprng" if seed is None else "seeded-pcg64",
        transport="inprocess" if submit is None else "grpc",
        seed=seed,
        mechanism=spec.describe(),
        confidence=level,
        method=method,
        distribution={
            "+".join(names[i] for i in range(k) if mask >> i & 1) or NONE_ANSWER: p
            for mask, p in zip(distribution.sets, distribution.probabilities, strict=True)
        },
        true_pairs=tuple(tuple(row) for row in truth.tolist()),
        first=first,
        item_coverage=tuple(rate(item_hits[:, i]) for i in range(k)),
        pair_coverage=tuple(tuple(rate(pair_hits[:, i, j]) for j in range(k)) for i in range(k)),
        conditional_coverage=tuple(
            tuple(rate(conditional_hits[:, i, j], i != j and shares[i] > 0) for j in range(k))
            for i in range(k)
        ),
        reports_per_second=n * runs / elapsed if elapsed > 0 else math.inf,
    )
