"""Simulated numeric surveys: draw values, perturb in the client, estimate the mean."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.simulation._anytime import (
    RepeatedLooks,
    look_ends,
    numeric_looks,
    running_sums,
)
from deniable.aggregator.analysis.simulation._binary import agreed
from deniable.aggregator.analysis.simulation._distributions import NumericDistribution
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.mechanisms import MeanEstimate, MeanTally, NumericMechanism, estimate_mean

__all__ = ["NumericSimulation", "NumericSubmit", "estimate_variance", "simulate_numeric"]

NumericSubmit = Callable[[NDArray[np.float64]], MeanEstimate]
"""Sends one survey's perturbed reports to an aggregator and returns its estimate."""


@dataclass(frozen=True)
class NumericSimulation:
    """What simulated numeric surveys gave, and how their repeats compare with theory.

    Attributes:
        participants: participants per repeat (n).
        distribution: the true values' distribution (``constant:V``, ``uniform``, ``beta:A,B``).
        repeats: number of independent simulated surveys (R).
        randomness: ``os-csprng`` or ``seeded-pcg64`` (perturbation source).
        transport: ``inprocess`` or ``grpc`` (where the estimates were computed).
        seed: the seed, when one was given.
        mechanism: the mechanism's ``describe()``.
        true_mean: the population mean E[x] being estimated.
        sample_mean: mean of the first repeat's true values.
        first: the first repeat's estimate.
        coverage: share of repeats whose interval contains ``true_mean`` (None for one).
        methods: how many repeats' intervals each construction built (the estimate's
            ``method``: ``t``, ``bernstein``, ``clopper-pearson``, ...), by name.
        coverage_se: Monte Carlo standard error sqrt(c(1−c)/R) of ``coverage``.
        mean_width: mean interval width.
        mean_estimate_raw: mean of the unbiased estimate over the repeats.
        std_estimate_raw: its empirical standard deviation (None for one repeat).
        std_theory: sqrt(``variance_theory``).
        variance_empirical: empirical variance of the unbiased estimate (None for one repeat).
        variance_theory: its variance for this distribution (see :func:`estimate_variance`).
        std_error_worst: the worst case over all distributions, sqrt(spec.variance_x(n)).
        reports_per_second: drawing, perturbation, tallying and estimation throughput.
        looks: each repeat looked at during collection (``LOOKS`` times): how often the
            anytime and the fixed-n interval ever missed the truth (None for one repeat).
    """

    participants: int
    distribution: str
    repeats: int
    randomness: str
    transport: str
    seed: int | None
    mechanism: dict[str, Any]
    true_mean: float
    sample_mean: float
    first: MeanEstimate
    coverage: float | None
    methods: dict[str, int]
    coverage_se: float | None
    mean_width: float
    mean_estimate_raw: float
    std_estimate_raw: float | None
    std_theory: float
    variance_empirical: float | None
    variance_theory: float
    std_error_worst: float
    reports_per_second: float
    looks: RepeatedLooks | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict; ``first`` becomes ``estimate``."""
        data = asdict(self)
        data["estimate"] = data.pop("first")
        return data


def estimate_variance(spec: NumericMechanism, distribution: NumericDistribution, n: int) -> float:
    """Var of the unbiased mean estimate from n i.i.d. participants, in x units squared.

    One report y (on the [−1, 1] scale) has population variance E[Var(y | t)] + Var(t);
    in x units that is ((hi − lo)/2)²·E[spec.variance(t)] + Var(x), divided by n. The
    expectation is a Gauss–Jacobi rule over the distribution (exact for a constant, and for
    the polynomial part of Var(y | t); see :meth:`NumericDistribution.quadrature`).
    """
    count = as_count("n", n, minimum=1)
    distribution.check_range(spec.lo, spec.hi)
    half = (spec.hi - spec.lo) / 2.0
    points, weights = distribution.quadrature(spec.lo, spec.hi)
    noise = math.fsum(
        w * spec.variance(spec.normalize(x))
        for x, w in zip(points.tolist(), weights.tolist(), strict=True)
    )
    return (half * half * noise + distribution.variance(spec.lo, spec.hi)) / count


def simulate_numeric(
    participants: int,
    distribution: NumericDistribution | str,
    spec: NumericMechanism,
    *,
    repeats: int = 1,
    confidence: float = 0.95,
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
    submit: NumericSubmit | None = None,
) -> NumericSimulation:
    """Simulate ``repeats`` surveys of ``participants`` people answering a value on [lo, hi].

    True values are drawn i.i.d. from ``distribution`` (so the interval targets the
    population mean), perturbed with the mechanism (OS CSPRNG unless ``seed``), tallied
    exactly and estimated with :func:`estimate_mean`. With ``submit`` (see
    :mod:`._simulate_grpc_kinds`), each
    repeat's reports also go to an aggregator whose estimate must equal the local one (else
    RuntimeError: a report was lost or doubled); ``first`` is then the aggregator's.

    Raises:
        ValueError: invalid participants, repeats, distribution or confidence (named).
    """
    dist = (
        NumericDistribution.parse(distribution) if isinstance(distribution, str) else distribution
    )
    n = as_count("participants", participants, minimum=1)
    runs = as_count("repeats", repeats, minimum=1)
    level = check_open_unit("confidence", confidence)
    dist.check_range(spec.lo, spec.hi)
    rng = np.random.default_rng(seed)
    perturb_rng = rng if seed is not None else None
    raw, low, high = np.empty(runs), np.empty(runs), np.empty(runs)
    ends = look_ends(n)
    sums_at, squares_at = np.empty((runs, ends.size)), np.empty((runs, ends.size))
    sample_mean = math.nan
    first: MeanEstimate | None = None
    methods: dict[str, int] = {}
    started = time.perf_counter()
    for run in range(runs):
        values = dist.draw(rng, n, spec.lo, spec.hi)
        if run == 0:
            sample_mean = float(values.mean())
        reports = spec.perturb_many(values, rng=perturb_rng)
        sums_at[run], squares_at[run] = running_sums(reports, ends), running_sums(reports**2, ends)
        local = estimate_mean(spec, MeanTally.empty(spec).add(spec, reports), level)
        if submit is not None:
            detail = "n={0.n}, estimate_raw={0.estimate_raw}".format
            remote = agreed(submit(reports), local, n, detail)
            first = first or remote
        first = first or local
        raw[run], low[run], high[run] = local.estimate_raw, local.ci_low, local.ci_high
        methods[local.method] = methods.get(local.method, 0) + 1
        if progress is not None:
            progress(1)
    elapsed = time.perf_counter() - started
    truth = dist.mean(spec.lo, spec.hi)
    coverage = float(np.mean((low <= truth) & (truth <= high))) if runs > 1 else None
    variance = float(raw.var(ddof=1)) if runs > 1 else None
    theory = estimate_variance(spec, dist, n)
    assert first is not None
    return NumericSimulation(
        participants=n,
        distribution=str(dist),
        repeats=runs,
        randomness="os-csprng" if seed is None else "seeded-pcg64",
        transport="inprocess" if submit is None else "grpc",
        seed=seed,
        mechanism=spec.describe(),
        true_mean=truth,
        sample_mean=sample_mean,
        first=first,
        coverage=coverage,
        methods=dict(sorted(methods.items())),
        coverage_se=(math.sqrt(coverage * (1 - coverage) / runs) if coverage is not None else None),
        mean_width=float(np.mean(high - low)),
        mean_estimate_raw=float(raw.mean()),
        std_estimate_raw=math.sqrt(variance) if variance is not None else None,
        std_theory=math.sqrt(theory),
        variance_empirical=variance,
        variance_theory=theory,
        std_error_worst=math.sqrt(spec.variance_x(n, "population")),
        reports_per_second=n * runs / elapsed if elapsed > 0 else math.inf,
        looks=(numeric_looks(spec, sums_at, squares_at, ends, truth, level) if runs > 1 else None),
    )
