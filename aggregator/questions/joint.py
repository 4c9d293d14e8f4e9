"""Joint questions on the aggregator's side: the cross-tab, its marginals and associations."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis.planning import AssociationPlan, plan_associations
from deniable.aggregator.analysis.publishing import Column, QuestionSampler, numbers, shares_of
from deniable.aggregator.analysis.simulation import (
    QUESTION_ID,
    GrpcTransport,
    JointSimulation,
    parse_shares,
    simulate_joint,
)
from deniable.aggregator.questions._base import (
    Emit,
    Outcome,
    PlanRequest,
    QuestionAnalysis,
    Simulation,
    SimulationRequest,
    Transport,
    interval_fields,
    register_analysis,
)
from deniable.aggregator.questions._estimate_text import option_lines
from deniable.aggregator.questions._joint_text import (
    joint_chart,
    joint_fields,
    joint_table,
    simulation_lines,
)
from deniable.aggregator.questions._planning import compared_plan, plan_outcome
from deniable.aggregator.questions._text import assumed
from deniable.shared.mechanisms import FrequencyOracle, Mechanism
from deniable.shared.questions.joint import part_values
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["DELTA_METHOD", "JOINT_ANALYSIS", "JointAnalysis"]

DELTA_METHOD = "wald (delta method)"
"""The method of a joint question's marginal, covariance and correlation intervals."""


class JointAnalysis(QuestionAnalysis):
    """Parts answered in one report: one cell's share, and with assumed cells correlations."""

    kind = "joint"
    plan_inputs = frozenset({"share", "distribution"})

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """One cell's share; with ``distribution`` (assumed cells) each pair's correlation."""
        result = compared_plan(question, request)
        oracle = cast(FrequencyOracle, mechanism)  # the type's contract
        plans: list[AssociationPlan] | None = None
        if request.distribution is not None:
            plans = plan_associations(
                question, oracle, parse_shares(request.distribution), margin=request.margin,
                participants=request.participants, confidence=request.confidence,
            )  # fmt: skip
        extra = {} if plans is None else {"associations": [plan.to_dict() for plan in plans]}

        def after(emit: Emit) -> None:
            for plan in plans or []:
                emit(
                    f"Correlation of {plan.part_a} and {plan.part_b} (assumed "
                    f"{plan.correlation:.4f} from the cells; {result.mechanism}, Var1 "
                    f"{plan.correlation_variance_one:.5g}, delta method): {plan.participants:,} "
                    f"participants for ±{plan.correlation_margin:.4f} (covariance "
                    f"±{plan.covariance_margin:.4f})"
                )

        what = f"one cell's share ({result.k} cells in one report, {assumed(result)})"
        return plan_outcome(result, what, ".4f", extra, after)

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """True cell shares ``--distribution``, the first part slowest."""
        oracle = cast(FrequencyOracle, mechanism)
        if request.distribution is None:
            raise ValueError(
                f"--type joint needs --distribution: {oracle.k} cell shares, the first part "
                "slowest (e.g. 0.5,0.1,0.1,0.3 for two yes/no parts: no-no, no-yes, yes-no, "
                "yes-yes)"
            )
        asked = pb.Question()
        asked.CopyFrom(question)
        asked.id = QUESTION_ID
        return _Joint(asked, oracle, parse_shares(request.distribution), request)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """Each row's cell drawn from the cross-tab, so the parts' relationship is kept."""
        return _joint_sampler(question, estimate)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """The cross-tab as a heat map, each part's marginal, and the associations."""
        return joint_chart(question, data)

    def quantities(self, estimate: pb.Estimate) -> Iterator[dict[str, Any]]:
        """A row per cell, per part's value (marginal), per pair's covariance and correlation.

        Marginals and associations have Wald intervals by the delta method.
        """
        for option in estimate.options:
            yield {"quantity": "cell", "label": option.option, **interval_fields(option)}
        delta = {"method": DELTA_METHOD, "coverage": estimate.joint_coverage}
        for marginal in estimate.marginals:
            for value in marginal.values:
                label = f"{marginal.part}={value.option}"
                yield {"quantity": "marginal", "label": label, **interval_fields(value), **delta}
        for association in estimate.associations:
            label = f"{association.part_a} ~ {association.part_b}"
            for name in ("covariance", "correlation"):
                yield {
                    "quantity": name,
                    "label": label,
                    "estimate": getattr(association, name),
                    "ci_low": getattr(association, f"{name}_low"),
                    "ci_high": getattr(association, f"{name}_high"),
                    "std_error": getattr(association, f"{name}_std_error"),
                    **delta,
                }

    def estimate_fields(self, estimate: pb.Estimate, data: dict[str, Any]) -> None:
        """The marginals, the associations and what their intervals promise."""
        joint_fields(estimate, data)

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """A line per cell, then the cross-tab, the marginals and the associations."""
        option_lines(row, emit)
        joint_table(row, emit)

    def note_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """What the marginals' and associations' intervals promise."""
        if row.get("joint_coverage"):
            emit(f"{visible(row['question_id'])}: {visible(row['joint_coverage'])}")


class _Joint(Simulation):
    def __init__(
        self,
        question: pb.Question,
        oracle: FrequencyOracle,
        shares: tuple[float, ...],
        request: SimulationRequest,
    ) -> None:
        self.question, self.oracle, self.shares, self.request = question, oracle, shares, request

    def run(self, transport: Transport) -> Outcome:
        request = self.request
        grpc: GrpcTransport | None = None
        if transport.grpc:
            client, address = transport.connect()
            grpc = GrpcTransport(
                client, self.oracle, address, request.confidence, request.method,
                transport.batch_size, embedded=transport.server is None,
                question=self.question, progress=transport.sent,
            )  # fmt: skip
        result: JointSimulation = simulate_joint(
            self.question, self.oracle, request.participants, self.shares,
            repeats=request.repeats, confidence=request.confidence, seed=request.seed,
            submit=grpc.exchange if grpc is not None else None, progress=transport.repeated,
        )  # fmt: skip
        grpc_info = grpc.summary() if grpc is not None else None
        document = {"type": "joint", **result.to_dict(), "grpc": grpc_info}
        return Outcome(document, lambda emit: simulation_lines(result, grpc_info, emit), result)


def _joint_sampler(question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
    parts = list(question.joint.parts)
    sizes = [len(part_values(part)) for part in parts]
    shares = shares_of([o.estimate for o in estimate.options], math.prod(sizes), question)
    names = ", ".join(part.id for part in parts)

    def part_column(
        part: pb.JointPart, index: NDArray[np.int64], rng: np.random.Generator
    ) -> list[str]:
        if part.WhichOneof("kind") == "numeric":
            edges = np.asarray(part.numeric.edges, dtype=np.float64)
            low, high = edges[index], edges[index + 1]
            return numbers(low + (high - low) * rng.random(len(index)))
        labels = np.asarray(part_values(part), dtype=object)
        return list(labels[index].tolist())

    def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
        cells = rng.choice(len(shares), size=n, p=shares)
        indexes = np.unravel_index(cells, sizes)  # row-major: the first part varies slowest
        return [
            part_column(part, np.asarray(index, dtype=np.int64), rng)
            for part, index in zip(parts, indexes, strict=True)
        ]

    columns = []
    for part in parts:
        within = (
            "; a number uniform within its drawn bin (the estimate knows only the bin)"
            if part.WhichOneof("kind") == "numeric"
            else ""
        )
        method = (
            f"joint part: each row's cell of the cross-tab of {names} drawn jointly from the "
            f"estimated cell shares (projected), so the parts' relationship is kept{within}"
        )
        columns.append(Column(f"{question.id}:{part.id}", question.id, method))
    return QuestionSampler(question.id, tuple(columns), (), draw)


JOINT_ANALYSIS = register_analysis(JointAnalysis())
