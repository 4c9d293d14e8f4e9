"""Simulated populations: perturb through the client, estimate through the aggregator."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.simulation._anytime import (
    RepeatedLooks,
    binary_looks,
    look_ends,
    running_sums,
)
from deniable.shared._validate import as_count, check_confidence, check_unit_interval
from deniable.shared.mechanisms import (
    BinaryRates,
    Mechanism,
    ProportionEstimate,
    Tally,
    keep_probability,
    proportion_arrays,
)
from deniable.shared.mechanisms._rr_coverage import exact_coverage
from deniable.shared.questions import QuestionType
from deniable.shared.stats import check_method

__all__ = ["SimulationResult", "Submit", "agreed", "check_spec_type", "simulate_binary"]

Estimate = TypeVar("Estimate")


def agreed(
    remote: Estimate, local: Estimate, n: int, detail: Callable[[Estimate], str]
) -> Estimate:
    """The aggregator's estimate, which must equal the one computed here from the same reports.

    Raises:
        RuntimeError: they differ (a report was lost or counted twice on the way).
    """
    if remote != local:
        raise RuntimeError(
            f"the aggregator's estimate disagrees with the {n} reports sent: "
            f"{detail(remote)} (expected {detail(local)})"
        )
    return remote


def check_spec_type(spec: object, kind: QuestionType) -> None:
    """Refuse a mechanism that does not answer ``kind`` questions (a caller's mistake).

    Raises:
        TypeError: ``spec`` is not a mechanism of that question type (naming its class).
    """
    if getattr(spec, "question_type", None) != kind.name:
        raise TypeError(f"spec must be a {kind.name} spec, got {type(spec).__name__}")


Submit = Callable[[NDArray[np.bool_]], ProportionEstimate]
"""Sends one survey's randomized reports to an aggregator and returns its estimate."""


@dataclass(frozen=True)
class SimulationResult:
    """What a simulated survey gave, and how its repeats compare with theory.

    Attributes:
        participants: participants per repeat (n).
        p: true population share used to draw answers.
        repeats: number of independent simulated surveys.
        randomness: ``os-csprng`` or ``seeded-pcg64`` (perturbation source).
        transport: ``inprocess`` or ``grpc`` (where the estimates were computed).
        seed: the seed, when one was given.
        sample_share: share of true yes-answers in the first repeat's sample.
        first: the first repeat's estimate.
        coverage: share of repeats whose interval contains p (None for one repeat).
        coverage_se: Monte Carlo standard error of ``coverage``.
        coverage_exact: the interval's exact coverage at (n, p, α), from the binomial pmf.
        mean_width: mean interval width over repeats.
        mean_estimate_raw: mean unbiased estimate over repeats.
        std_estimate_raw: empirical standard deviation of the unbiased estimate.
        std_theory: theoretical sqrt(λ(1−λ)/(α²n)).
        reports_per_second: perturbation plus estimation throughput.
        looks: each repeat looked at during collection (``LOOKS`` times): how often the
            anytime and the fixed-n interval ever missed the truth (None for one repeat).
    """

    participants: int
    p: float
    repeats: int
    randomness: str
    transport: str
    seed: int | None
    sample_share: float
    first: ProportionEstimate
    coverage: float | None
    coverage_se: float | None
    coverage_exact: float
    mean_width: float
    mean_estimate_raw: float
    std_estimate_raw: float | None
    std_theory: float
    reports_per_second: float
    looks: RepeatedLooks | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict; ``first`` becomes ``estimate``."""
        data = asdict(self)
        data["estimate"] = data.pop("first")
        return data


def simulate_binary(
    participants: int,
    p: float,
    spec: Mechanism,
    *,
    repeats: int = 1,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
    submit: Submit | None = None,
) -> SimulationResult:
    """Simulate ``repeats`` surveys of ``participants`` people whose true share is ``p``.

    True answers are drawn i.i.d. Bernoulli(p) (so the estimand is the population share),
    perturbed with the mechanism's ``perturb_many`` and estimated with its own estimator.
    ``spec`` is any yes/no mechanism: its rates (:class:`BinaryRates`, the contract of a
    yes/no mechanism) give the intervals over the repeats and their exact coverage.
    Without ``seed`` the perturbation uses the OS CSPRNG, exactly as
    a participant's device does; with ``seed`` everything is reproducible.

    With ``submit`` (see :mod:`._simulate_grpc`), each repeat's reports also go
    to an aggregator, whose estimate must equal the one computed here from the same
    reports: a report lost or counted twice on the way raises RuntimeError.
    """
    n = as_count("participants", participants, minimum=1)
    runs = as_count("repeats", repeats, minimum=1)
    share = check_unit_interval("p", p)
    level = check_confidence(confidence)
    check_method(method)
    rates = cast(BinaryRates, spec)  # every yes/no mechanism has its channel's rates
    _, alpha = keep_probability(rates)
    rng = np.random.default_rng(seed)
    perturb_rng = rng if seed is not None else None
    ones = np.empty(runs, dtype=np.int64)
    ends = look_ends(n)
    ones_at = np.empty((runs, ends.size))
    sample_share = math.nan
    first: ProportionEstimate | None = None
    started = time.perf_counter()
    for run in range(runs):
        truth = rng.random(n) < share
        if run == 0:
            sample_share = float(truth.mean())
        reports = spec.perturb_many(truth, rng=perturb_rng)
        ones[run] = np.count_nonzero(reports)
        ones_at[run] = running_sums(reports, ends)
        if submit is not None:
            local = _estimate(spec, int(ones[run]), n, level, method)
            remote = agreed(submit(reports), local, n, _proportion_detail)
            first = first or remote
        if progress is not None:
            progress(1)
    arrays = proportion_arrays(ones, n, rates, level, method, "population")
    elapsed = time.perf_counter() - started
    covered = (arrays["ci_low"] <= share) & (share <= arrays["ci_high"])
    coverage = float(covered.mean()) if runs > 1 else None
    return SimulationResult(
        participants=n,
        p=share,
        repeats=runs,
        randomness="os-csprng" if seed is None else "seeded-pcg64",
        transport="inprocess" if submit is None else "grpc",
        seed=seed,
        sample_share=sample_share,
        first=first or _estimate(spec, int(ones[0]), n, level, method),
        coverage=coverage,
        coverage_se=(math.sqrt(coverage * (1 - coverage) / runs) if coverage is not None else None),
        coverage_exact=exact_coverage(n, share, alpha, level, method),
        mean_width=float((arrays["ci_high"] - arrays["ci_low"]).mean()),
        mean_estimate_raw=float(arrays["estimate_raw"].mean()),
        std_estimate_raw=float(arrays["estimate_raw"].std(ddof=1)) if runs > 1 else None,
        std_theory=math.sqrt(spec.estimate_variance(n, share)),
        reports_per_second=n * runs / elapsed if elapsed > 0 else math.inf,
        looks=binary_looks(rates, ones_at, ends, share, level, method) if runs > 1 else None,
    )


def _estimate(spec: Mechanism, ones: int, n: int, level: float, method: str) -> ProportionEstimate:
    """The mechanism's own estimate from ``ones`` yes-reports of ``n``."""
    return cast(ProportionEstimate, spec.estimate(Tally(n, (ones,)), level, method))


def _proportion_detail(estimate: ProportionEstimate) -> str:
    return f"n={estimate.n}, estimate_raw={estimate.estimate_raw}"
