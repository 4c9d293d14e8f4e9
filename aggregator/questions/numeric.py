"""Numeric questions on the aggregator's side: the mean planned, simulated and shown."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from deniable.aggregator.analysis.publishing import (
    Interval,
    QuestionSampler,
    fmt,
    interval_chart,
    max_entropy_rate,
    numbers,
    sample_max_entropy,
    single_column,
)
from deniable.aggregator.analysis.simulation import (
    Accuracy,
    NumericDistribution,
    NumericSimulation,
    looks_line,
    numeric_grpc_submitter,
    rmse,
    simulate_numeric,
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
from deniable.aggregator.questions._planning import compared_plan, plan_outcome
from deniable.aggregator.questions._text import (
    mechanism_summary,
    privacy_per_answer,
    ratio_text,
    transport_line,
)
from deniable.shared.mechanisms import Mechanism, NumericMechanism
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["NUMERIC_ANALYSIS", "NumericAnalysis"]


class NumericAnalysis(QuestionAnalysis):
    """A number on a range: the mean planned for the worst distribution, simulated from one."""

    kind = "numeric"
    simulate_inputs = frozenset({"distribution"})  # the interval is chosen: no --method

    sweeps = True

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """Every numeric mechanism compared on the mean, in the answer's units."""
        result = compared_plan(question, request)
        what = f"the mean (x units on [{result.lo:g}, {result.hi:g}], worst-case values)"
        return plan_outcome(result, what, ".4g")

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """Values from ``--distribution``: constant:V, uniform or beta:A,B on the range."""
        if request.distribution is None:
            raise ValueError("--type numeric needs --distribution (e.g. uniform)")
        numeric = cast(NumericMechanism, mechanism)  # the type's contract
        values = NumericDistribution.parse(request.distribution)
        values.check_range(numeric.lo, numeric.hi)
        return _Numeric(numeric, values, request)

    def accuracy(self, result: NumericSimulation) -> Accuracy:
        """The mean's RMSE against the true mean, mean width and coverage."""
        error = rmse(result.mean_estimate_raw - result.true_mean, result.std_estimate_raw)
        return Accuracy(error, result.mean_width, result.coverage, result.repeats)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """Numbers from the maximum-entropy distribution with the estimated mean."""
        return _numeric_sampler(question, estimate)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """The mean and its interval on the question's range."""
        qid = question.id
        row = Interval(qid, data["estimate"], data["ci_low"], data["ci_high"])
        low, high = question.numeric.min, question.numeric.max
        chart = interval_chart([row], low, high, title=f"{qid}: mean", bars=False)
        worst = data.get("std_error_worst", 0.0)
        note = f"std error {fmt(data['std_error'])}" + (
            f", worst case {fmt(worst)}" if worst else ""
        )
        return chart + f'<p class="muted">Mean on [{low:g}, {high:g}]; {note}.</p>'

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """The mean's row, and the mechanism's worst-case standard error."""
        share_line(row, emit)
        if "std_error_worst" in row:
            emit(
                f"{'':<16}{'':>9}  mean of a number ({visible(row['mechanism'])}); worst-case "
                f"std err {row['std_error_worst']:.4f}"
            )


class _Numeric(Simulation):
    def __init__(
        self, numeric: NumericMechanism, values: NumericDistribution, request: SimulationRequest
    ) -> None:
        self.numeric, self.values, self.request = numeric, values, request

    def run(self, transport: Transport) -> Outcome:
        request = self.request
        submit = None
        if transport.grpc:
            submit = transport.stack.enter_context(
                numeric_grpc_submitter(self.numeric, **transport.submitting(request.confidence))
            )
        result = simulate_numeric(
            request.participants, self.values, self.numeric, repeats=request.repeats,
            confidence=request.confidence, seed=request.seed, progress=transport.repeated,
            submit=submit,
        )  # fmt: skip
        grpc_info = submit.summary() if submit is not None else None
        document = {"type": "numeric", **result.to_dict(), "grpc": grpc_info}
        return Outcome(document, lambda emit: _show(result, grpc_info, emit), result)


def _show(result: NumericSimulation, grpc_info: dict[str, Any] | None, emit: Emit) -> None:
    first = result.first
    emit(
        f"Simulated {result.participants:,} participants with values on "
        f"[{first.lo:g}, {first.hi:g}] from {result.distribution} (true mean "
        f"{result.true_mean:.6g}, sample mean {result.sample_mean:.6g}; "
        f"randomness: {result.randomness})"
    )
    emit(f"Mechanism: {mechanism_summary(result.mechanism)}")
    emit(privacy_per_answer(first.epsilon))
    emit(
        f"Estimate: {first.estimate:.6g}  (unbiased raw {first.estimate_raw:.6g}, std error "
        f"{first.std_error:.4g}; worst case over distributions {first.std_error_worst:.4g})"
    )
    emit(
        f"{first.confidence:.0%} CI: [{first.ci_low:.6g}, {first.ci_high:.6g}]  "
        f"({first.method} interval: {first.coverage}; estimand: {first.estimand})"
    )
    if result.repeats > 1:
        _repeats(result, grpc_info is None, emit)
    if grpc_info is not None:
        emit(transport_line(grpc_info))


def _repeats(result: NumericSimulation, in_process: bool, emit: Emit) -> None:
    first = result.first
    assert result.coverage is not None
    assert result.coverage_se is not None
    assert result.variance_empirical is not None
    assert result.std_estimate_raw is not None
    ratio = ratio_text(result.variance_empirical, result.variance_theory)
    methods = ", ".join(f"{name} {count:,}" for name, count in result.methods.items())
    rows = [
        ("CI coverage", f"{result.coverage:.4f} ± {result.coverage_se:.4f} (MC SE)",
         f"{first.confidence:g} (nominal)"),
        ("CI method", methods, ""),
        ("mean estimate", f"{result.mean_estimate_raw:.6g}", f"{result.true_mean:.6g} (truth)"),
        ("std of estimate", f"{result.std_estimate_raw:.4g}", f"{result.std_theory:.4g}"),
        ("variance", f"{result.variance_empirical:.4g}",
         f"{result.variance_theory:.4g} (ratio {ratio})"),
        ("mean CI width", f"{result.mean_width:.4g}", ""),
    ]  # fmt: skip
    emit(f"Over {result.repeats:,} repeats:")
    emit(f"  {'':<16} {'empirical':<28} theory")
    for label, empirical, theory in rows:
        emit(f"  {label:<16} {empirical:<28} {theory}".rstrip())
    emit(looks_line(result.looks, first.confidence))
    if in_process:
        emit(f"  throughput: {result.reports_per_second:,.0f} reports/s in-process")


def _numeric_sampler(question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
    lo, hi = question.numeric.min, question.numeric.max
    mean = min(hi, max(lo, estimate.estimate))

    def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
        return [numbers(sample_max_entropy(lo, hi, mean, rng, n))]

    t = (mean - lo) / (hi - lo)
    if t <= 0.0 or t >= 1.0:
        shape = f"the estimated mean is the bound {mean:g}: every row is {mean:g}"
    elif abs(t - 0.5) < 1e-12:
        shape = "the mean is the midpoint: uniform"
    else:
        shape = f"a truncated exponential, density ∝ exp({max_entropy_rate(t) / (hi - lo):.6g}·x)"
    method = (
        f"numeric: the estimate is a mean only ({mean:.6g}), not a distribution; drawn from the "
        f"maximum-entropy distribution on [{lo:g}, {hi:g}] with that mean ({shape})"
    )
    return single_column(question, method, draw)


NUMERIC_ANALYSIS = register_analysis(NumericAnalysis())
