"""Simulated multiple-choice surveys: draw options, perturb in the client, estimate the shares."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deniable.aggregator.analysis.simulation._anytime import (
    RepeatedLooks,
    categorical_looks,
    look_ends,
)
from deniable.aggregator.analysis.simulation._binary import agreed, check_spec_type
from deniable.aggregator.analysis.simulation._distributions import check_option_names, check_shares
from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms import (
    FrequencyEstimate,
    FrequencyOracle,
    estimate_frequencies,
    frequency_arrays,
)
from deniable.shared.questions import CATEGORICAL
from deniable.shared.stats import check_method

__all__ = [
    "CategoricalSimulation",
    "CategoricalSubmit",
    "OptionSummary",
    "simulate_categorical",
]

CategoricalSubmit = Callable[[Any], FrequencyEstimate]
"""Sends one survey's perturbed reports to an aggregator and returns its estimate."""


@dataclass(frozen=True)
class OptionSummary:
    """One option's figures over the repeats (population estimand).

    Attributes:
        option: the option's name.
        share: its true population share f.
        sample_share: its share among the first repeat's true answers.
        coverage: share of repeats whose interval contains f (None for one repeat).
        coverage_se: Monte Carlo standard error sqrt(c(1−c)/R) of ``coverage``.
        coverage_exact: the interval's coverage at (n, f), summed over the binomial pmf.
        mean_width: mean interval width.
        mean_estimate_raw: mean of the unbiased estimate over the repeats.
        std_estimate_raw: its empirical standard deviation (None for one repeat).
        std_theory: sqrt(``variance_theory``).
        variance_empirical: empirical variance of the unbiased estimate (None for one repeat).
        variance_theory: the mechanism's ``variance(f, n, "population")``.
    """

    option: str
    share: float
    sample_share: float
    coverage: float | None
    coverage_se: float | None
    coverage_exact: float
    mean_width: float
    mean_estimate_raw: float
    std_estimate_raw: float | None
    std_theory: float
    variance_empirical: float | None
    variance_theory: float


@dataclass(frozen=True)
class CategoricalSimulation:
    """What simulated multiple-choice surveys gave, and how their repeats compare with theory.

    Attributes:
        participants: participants per repeat (n).
        options: the option names.
        repeats: number of independent simulated surveys (R).
        randomness: ``os-csprng`` or ``seeded-pcg64`` (perturbation source).
        transport: ``inprocess`` or ``grpc`` (where the estimates were computed).
        seed: the seed, when one was given.
        mechanism: the mechanism's ``describe()``.
        first: the first repeat's estimate.
        per_option: one summary per option.
        reports_per_second: drawing, perturbation, support counting and estimation throughput.
        joint_coverage: share of repeats in which the per-option intervals cover every
            option at once (None for one repeat); below nominal, as they promise only
            each option's own coverage.
        joint_coverage_se: Monte Carlo standard error of ``joint_coverage``.
        simultaneous_coverage: the same for the simultaneous intervals (``estimate
            --simultaneous``), which promise the nominal level for all options at once.
        simultaneous_coverage_se: Monte Carlo standard error of ``simultaneous_coverage``.
        simultaneous_mean_width: mean width of each option's simultaneous interval.
        looks: each repeat looked at during collection (``LOOKS`` times): how often the
            anytime and the fixed-n interval ever missed the truth (None for one repeat).
    """

    participants: int
    options: tuple[str, ...]
    repeats: int
    randomness: str
    transport: str
    seed: int | None
    mechanism: dict[str, Any]
    first: FrequencyEstimate
    per_option: tuple[OptionSummary, ...]
    reports_per_second: float
    joint_coverage: float | None = None
    joint_coverage_se: float | None = None
    simultaneous_coverage: float | None = None
    simultaneous_coverage_se: float | None = None
    simultaneous_mean_width: tuple[float, ...] = ()
    looks: RepeatedLooks | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict; ``first`` becomes ``estimate``."""
        data = asdict(self)
        data["estimate"] = self.first.to_dict()
        del data["first"]
        data["per_option"] = [asdict(row) for row in self.per_option]
        return data


def simulate_categorical(
    participants: int,
    distribution: Sequence[float],
    spec: FrequencyOracle,
    *,
    options: Sequence[str] | None = None,
    repeats: int = 1,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
    submit: CategoricalSubmit | None = None,
) -> CategoricalSimulation:
    """Simulate ``repeats`` surveys of ``participants`` people choosing one of k options.

    True options are drawn i.i.d. from ``distribution`` (k shares, >= 0, summing to 1 within
    1e-9), so the intervals target population shares. Each answer is perturbed with the
    mechanism (OS CSPRNG unless ``seed``), reduced to support counts and estimated with
    :func:`estimate_frequencies`, with per-option and with simultaneous intervals (how
    often each covers all options at once is reported). With ``submit`` (see
    :mod:`._simulate_grpc_kinds`), each repeat's reports also go to an aggregator whose
    estimate must equal the local one (else RuntimeError: a report was lost or doubled);
    ``first`` is then the aggregator's.

    Raises:
        ValueError: invalid participants, repeats, shares, options, confidence or method
            (the message names the value).
        TypeError: ``spec`` is not a multiple-choice mechanism.
    """
    check_spec_type(spec, CATEGORICAL)
    n = as_count("participants", participants, minimum=1)
    runs = as_count("repeats", repeats, minimum=1)
    shares = check_shares(distribution, spec.k)
    names = check_option_names(
        options if options is not None else [str(i) for i in range(spec.k)], spec.k
    )
    level = check_confidence(confidence)
    check_method(method)
    rng = np.random.default_rng(seed)
    perturb_rng = rng if seed is not None else None
    probabilities = np.asarray(shares) / math.fsum(shares)
    counts = np.empty((runs, spec.k), dtype=np.int64)
    ends = look_ends(n)
    counts_at = np.empty((runs, ends.size, spec.k))
    sample = np.zeros(spec.k)
    first: FrequencyEstimate | None = None
    started = time.perf_counter()
    for run in range(runs):
        truth = rng.choice(spec.k, size=n, p=probabilities)
        if run == 0:
            sample = np.bincount(truth, minlength=spec.k) / n
        reports = spec.perturb_many(truth, rng=perturb_rng)
        counts[run] = spec.support_counts(reports)
        starts = np.append(0, ends[:-1])
        steps = [spec.support_counts(reports[a:b]) for a, b in zip(starts, ends, strict=True)]
        counts_at[run] = np.cumsum(steps, axis=0)
        if submit is not None:
            local = estimate_frequencies(counts[run], n, spec, level, "population", method)
            remote = agreed(
                submit(reports),
                local,
                n,
                lambda e: f"n={e.n}, support_counts={list(e.support_counts)}",
            )
            first = first or remote
        if progress is not None:
            progress(1)
    arrays = frequency_arrays(counts, n, spec, level, method, "population")
    together = frequency_arrays(counts, n, spec, level, method, "population", simultaneous=True)
    elapsed = time.perf_counter() - started
    truth_row = np.asarray(shares)[None, :]
    covered = (arrays["ci_low"] <= truth_row) & (truth_row <= arrays["ci_high"])
    covered_together = (together["ci_low"] <= truth_row) & (truth_row <= together["ci_high"])
    widths = (arrays["ci_high"] - arrays["ci_low"]).mean(axis=0)
    joint = _share_with_se(covered.all(axis=1)) if runs > 1 else (None, None)
    simultaneous = _share_with_se(covered_together.all(axis=1)) if runs > 1 else (None, None)
    raw = arrays["estimate_raw"]
    rows = []
    for v in range(spec.k):
        coverage = float(covered[:, v].mean()) if runs > 1 else None
        variance = float(raw[:, v].var(ddof=1)) if runs > 1 else None
        theory = spec.variance(shares[v], n, "population")
        rows.append(
            OptionSummary(
                option=names[v],
                share=shares[v],
                sample_share=float(sample[v]),
                coverage=coverage,
                coverage_se=(
                    math.sqrt(coverage * (1 - coverage) / runs) if coverage is not None else None
                ),
                coverage_exact=spec.exact_coverage(n, shares[v], level, method),
                mean_width=float(widths[v]),
                mean_estimate_raw=float(raw[:, v].mean()),
                std_estimate_raw=math.sqrt(variance) if variance is not None else None,
                std_theory=math.sqrt(theory),
                variance_empirical=variance,
                variance_theory=theory,
            )
        )
    return CategoricalSimulation(
        participants=n,
        options=names,
        repeats=runs,
        randomness="os-csprng" if seed is None else "seeded-pcg64",
        transport="inprocess" if submit is None else "grpc",
        seed=seed,
        mechanism=spec.describe(),
        first=first or estimate_frequencies(counts[0], n, spec, level, "population", method),
        per_option=tuple(rows),
        reports_per_second=n * runs / elapsed if elapsed > 0 else math.inf,
        joint_coverage=joint[0],
        joint_coverage_se=joint[1],
        simultaneous_coverage=simultaneous[0],
        simultaneous_coverage_se=simultaneous[1],
        simultaneous_mean_width=tuple(
            (together["ci_high"] - together["ci_low"]).mean(axis=0).tolist()
        ),
        looks=(
            categorical_looks(spec, counts_at, ends, shares, level, method) if runs > 1 else None
        ),
    )


def _share_with_se(hits: Any) -> tuple[float, float]:
    """The share of true entries and its Monte Carlo standard error sqrt(c(1−c)/R)."""
    share = float(np.mean(hits))
    return share, math.sqrt(share * (1.0 - share) / np.size(hits))
