"""Yes/no questions on the aggregator's side: the yes-share planned, simulated and shown."""

from __future__ import annotations

from typing import Any

import numpy as np

from deniable.aggregator.analysis.planning import plan
from deniable.aggregator.analysis.publishing import (
    Interval,
    QuestionSampler,
    fmt,
    interval_chart,
    single_column,
)
from deniable.aggregator.analysis.simulation import (
    Accuracy,
    SimulationResult,
    grpc_submitter,
    looks_line,
    rmse,
    simulate_binary,
)
from deniable.aggregator.questions._base import (
    Emit,
    Outcome,
    PlanRequest,
    QuestionAnalysis,
    Simulation,
    SimulationRequest,
    Transport,
    register_analysis,
)
from deniable.aggregator.questions._estimate_text import share_line
from deniable.aggregator.questions._text import (
    mechanism_summary,
    privacy_per_answer,
    transport_line,
)
from deniable.shared.mechanisms import Mechanism
from deniable.shared.stats import ESTIMANDS
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["BINARY_ANALYSIS", "BinaryAnalysis", "mechanism_line", "privacy_line"]


def mechanism_line(mechanism: Mechanism) -> str:
    """``Mechanism: …``: by title and α where the mechanism has an α, else its parameters."""
    described = mechanism.describe()
    if "alpha" in described:
        return f"Mechanism: {mechanism.title}, alpha = {described['alpha']:.6g}"
    return f"Mechanism: {mechanism_summary(described)}"


def privacy_line(mechanism: Mechanism) -> str:
    """Exact ε, with 2α shown only as the labelled approximation (where there is an α)."""
    approx = mechanism.describe().get("epsilon_approx")
    if approx is None or not mechanism.is_private:
        return privacy_per_answer(mechanism.epsilon)
    return (
        f"Privacy: epsilon = {mechanism.epsilon:.4f} (exact, ln((1+a)/(1-a))); "
        f"approximation 2*alpha = {approx:.4f} understates it"
    )


class BinaryAnalysis(QuestionAnalysis):
    """Yes or no: the yes-share planned at an assumed share, simulated from a true one."""

    kind = "binary"
    plan_inputs = frozenset({"share"})
    simulate_inputs = frozenset({"share", "method"})

    sweeps = True
    compares_central = True

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """Participants for a margin on the yes-share at ``share`` (default ½, the worst)."""
        p = 0.5 if request.share is None else request.share
        result = plan(
            mechanism, margin=request.margin, participants=request.participants,
            confidence=request.confidence, p=p,
        )  # fmt: skip

        def show(emit: Emit) -> None:
            confidence = result.confidence
            if request.margin is not None:
                emit(
                    f"Participants needed: {result.participants:,} for a margin of "
                    f"±{request.margin:g} at {confidence:.0%} confidence (assumed share p = {p:g})"
                )
            else:
                emit(
                    f"Margin achieved: ±{result.margin:.4f} with {result.participants:,} "
                    f"participants at {confidence:.0%} confidence (assumed share p = {p:g})"
                )
            emit(mechanism_line(mechanism))
            emit(privacy_line(mechanism))
            emit(f"Method: {result.method}")

        return Outcome(result.to_dict(), show, result)

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """Answers yes with probability ``--p``, i.i.d."""
        if request.share is None:
            raise ValueError("--type binary needs --p (the true yes-share)")
        return _Binary(mechanism, request.share, request)

    def accuracy(self, result: SimulationResult) -> Accuracy:
        """The yes-share's RMSE against the truth, mean width and coverage."""
        error = rmse(result.mean_estimate_raw - result.p, result.std_estimate_raw)
        return Accuracy(error, result.mean_width, result.coverage, result.repeats)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """Rows answering yes with the estimated share (clipped to [0, 1])."""
        return _binary_sampler(question, estimate)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """The yes-share and its interval on [0, 1]."""
        qid = question.id
        row = Interval(qid, data["estimate"], data["ci_low"], data["ci_high"])
        chart = interval_chart([row], 0.0, 1.0, title=f"{qid}: share answering yes", bars=False)
        return chart + (
            f'<p class="muted">Share answering yes: {fmt(row.estimate)} '
            f"[{fmt(row.low)}, {fmt(row.high)}]; unbiased {fmt(data['estimate_raw'])}, "
            f"std error {fmt(data['std_error'])}.</p>"
        )

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """The yes-share's row."""
        share_line(row, emit)


class _Binary(Simulation):
    def __init__(self, spec: Mechanism, share: float, request: SimulationRequest) -> None:
        self.spec, self.share, self.request = spec, share, request

    def run(self, transport: Transport) -> Outcome:
        request = self.request
        submit = None
        if transport.grpc:
            submit = transport.stack.enter_context(
                grpc_submitter(
                    self.spec, method=request.method, **transport.submitting(request.confidence)
                )
            )
        result = simulate_binary(
            request.participants, self.share, self.spec, repeats=request.repeats,
            confidence=request.confidence, method=request.method, seed=request.seed,
            progress=transport.repeated, submit=submit,
        )  # fmt: skip
        grpc_info = submit.summary() if submit is not None else None
        document = result.to_dict() | {"grpc": grpc_info}
        return Outcome(document, lambda emit: _show(result, self.spec, grpc_info, emit), result)


def _show(
    result: SimulationResult, spec: Mechanism, grpc_info: dict[str, Any] | None, emit: Emit
) -> None:
    first = result.first
    emit(
        f"Simulated {result.participants:,} participants with true share p = {result.p:g} "
        f"(share in this sample: {result.sample_share:.4f}; randomness: {result.randomness})"
    )
    emit(mechanism_line(spec))
    emit(privacy_line(spec))
    emit(
        f"Estimate: {first.estimate:.4f}  (unbiased raw {first.estimate_raw:.4f}, "
        f"std error {first.std_error:.4f})"
    )
    emit(
        f"{first.confidence:.0%} CI: [{first.ci_low:.4f}, {first.ci_high:.4f}]  "
        f"({first.method}; estimand: {ESTIMANDS[first.estimand]})"
    )
    if result.repeats > 1:
        assert result.coverage is not None
        assert result.coverage_se is not None
        emit(f"Over {result.repeats:,} repeats:")
        emit(
            f"  CI coverage: {result.coverage:.4f} ± {result.coverage_se:.4f} (Monte Carlo SE); "
            f"exact {result.coverage_exact:.4f}; nominal {first.confidence:g}"
        )
        emit(f"  mean CI width: {result.mean_width:.4f}")
        emit(looks_line(result.looks, first.confidence))
        emit(
            f"  raw estimate: mean {result.mean_estimate_raw:.4f} (truth {result.p:g}), "
            f"std {result.std_estimate_raw:.4f} (theory {result.std_theory:.4f})"
        )
        if grpc_info is None:
            emit(
                f"  throughput: {result.reports_per_second:,.0f} reports/s in-process "
                "(drawing answers, perturbing, estimating)"
            )
    if grpc_info is not None:
        emit(transport_line(grpc_info))


def _binary_sampler(question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
    p = min(1.0, max(0.0, estimate.estimate))

    def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
        return [np.where(rng.random(n) < p, "yes", "no").tolist()]

    method = f"yes/no: Bernoulli({p:.6g}), the estimated share answering yes (clipped to [0, 1])"
    return single_column(question, method, draw)


BINARY_ANALYSIS = register_analysis(BinaryAnalysis())
