"""Simulated joint questions: correlated true answers, coverage of the joint intervals."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deniable.shared._validate import as_count, check_confidence
from deniable.shared.mechanisms import FrequencyOracle, Tally
from deniable.shared.questions import JOINT
from deniable.shared.questions.joint import cell_names, joint_truth
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["JointSimulation", "simulate_joint"]

Exchange = Callable[[Any], pb.Estimate]
"""Submits one survey's reports and returns its estimate (over gRPC), or None in process."""


@dataclass(frozen=True)
class JointSimulation:
    """``repeats`` surveys of ``participants`` whose true cells are drawn from ``truth``.

    Coverage is the fraction of surveys whose interval contains the population value:
    per cell (``cells``), all cells at once (``cells_all``), per marginal value
    (``marginals``: part → one per value) and per association (covariance, correlation).

    Attributes:
        first: the first survey's estimate (the ``Estimate`` fields of a joint question).
    """

    participants: int
    repeats: int
    confidence: float
    simultaneous: bool
    mechanism: str
    epsilon: float
    k: int
    cells: tuple[str, ...]
    truth: tuple[float, ...]
    cell_coverage: tuple[float, ...]
    cells_all_coverage: float
    marginal_coverage: dict[str, tuple[float, ...]]
    associations: tuple[dict[str, Any], ...]
    first: dict[str, Any]
    randomness: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples become lists)."""
        return asdict(self)


def simulate_joint(
    question: pb.Question,
    mechanism: FrequencyOracle,
    participants: int,
    distribution: Sequence[float],
    *,
    repeats: int = 1,
    confidence: float = 0.95,
    simultaneous: bool = False,
    seed: int | None = None,
    submit: Exchange | None = None,
    progress: Callable[[int], None] | None = None,
) -> JointSimulation:
    """Draw each participant's cell from ``distribution``, perturb, estimate, compare.

    ``distribution`` is the population's share of each cell, in cell order (the first
    part slowest), so the parts' answers are as correlated as it makes them. Estimates
    come from ``submit`` (reports through a daemon) or, without it, in this process by the
    same code the daemon runs (the mechanism's estimate, then the joint question type's).

    Raises:
        ValueError: a distribution of the wrong length, negative, or not summing to 1.
    """
    n = as_count("participants", participants, minimum=1)
    runs = as_count("repeats", repeats, minimum=1)
    level = check_confidence(confidence)
    shares = np.asarray(distribution, dtype=np.float64)
    if shares.shape != (mechanism.k,):
        raise ValueError(
            f"distribution: need {mechanism.k} cell shares (one per cell, the first part "
            f"slowest), got {shares.size}"
        )
    if not np.all(np.isfinite(shares)) or np.any(shares < 0) or abs(shares.sum() - 1) > 1e-9:
        raise ValueError(
            f"distribution: cell shares must be non-negative and sum to 1, got sum "
            f"{float(shares.sum())!r}"
        )
    shares = shares / shares.sum()
    rng = np.random.default_rng(seed) if seed is not None else None
    draw = rng if rng is not None else np.random.default_rng()
    marginals_truth, associations_truth = joint_truth(question, shares)
    cell_hits = np.zeros(mechanism.k)
    all_hits = 0
    marginal_hits = [np.zeros(len(values)) for values in marginals_truth]
    pair_hits = np.zeros((len(associations_truth), 2))
    first: pb.Estimate | None = None
    started = time.perf_counter()
    for _ in range(runs):
        truths = draw.choice(mechanism.k, size=n, p=shares)
        reports = mechanism.perturb_many(truths, rng)
        if submit is not None:
            estimate = submit(reports)
        else:
            result = mechanism.estimate(
                Tally(n, tuple(mechanism.tally(reports))), level, simultaneous=simultaneous
            )
            estimate = pb.Estimate(**result.wire_fields(question))
            JOINT.complete_estimate(question, mechanism, estimate, simultaneous=simultaneous)
        if first is None:
            first = estimate
        covered = [
            o.ci_low <= t <= o.ci_high for o, t in zip(estimate.options, shares, strict=True)
        ]
        cell_hits += covered
        all_hits += all(covered)
        for hits, marginal, truth in zip(
            marginal_hits, estimate.marginals, marginals_truth, strict=True
        ):
            hits += [
                v.ci_low <= t <= v.ci_high for v, t in zip(marginal.values, truth, strict=True)
            ]
        for row, (pair, (cov, rho)) in enumerate(
            zip(estimate.associations, associations_truth, strict=True)
        ):
            pair_hits[row, 0] += pair.covariance_low <= cov <= pair.covariance_high
            pair_hits[row, 1] += pair.correlation_low <= rho <= pair.correlation_high
        if progress is not None:
            progress(1)
    assert first is not None
    parts = [part.id for part in question.joint.parts]
    scored = [(a.part_a, a.part_b) for a in first.associations]
    return JointSimulation(
        participants=n,
        repeats=runs,
        confidence=level,
        simultaneous=simultaneous,
        mechanism=mechanism.name,
        epsilon=mechanism.epsilon,
        k=mechanism.k,
        cells=tuple(cell_names(question)),
        truth=tuple(shares.tolist()),
        cell_coverage=tuple((cell_hits / runs).tolist()),
        cells_all_coverage=all_hits / runs,
        marginal_coverage={
            part: tuple((hits / runs).tolist())
            for part, hits in zip(parts, marginal_hits, strict=True)
        },
        associations=tuple(
            {
                "part_a": a,
                "part_b": b,
                "covariance": cov,
                "correlation": rho,
                "covariance_coverage": hits[0] / runs,
                "correlation_coverage": hits[1] / runs,
            }
            for (a, b), (cov, rho), hits in zip(scored, associations_truth, pair_hits, strict=True)
        ),
        first=_estimate_dict(first),
        randomness="seeded-pcg64" if rng is not None else "os-csprng",
        seconds=time.perf_counter() - started,
    )


def _estimate_dict(estimate: pb.Estimate) -> dict[str, Any]:
    """The joint fields of an estimate as plain values."""
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(
        estimate, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
