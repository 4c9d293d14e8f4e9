"""Multiple choice on the aggregator's side: one option's share planned, simulated and shown."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from deniable.aggregator.analysis.publishing import (
    QuestionSampler,
    interval_chart,
    intervals,
    number_table,
    shares_of,
    single_column,
)
from deniable.aggregator.analysis.simulation import (
    Accuracy,
    CategoricalSimulation,
    categorical_grpc_submitter,
    check_shares,
    looks_line,
    parse_shares,
    rmse,
    simulate_categorical,
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
from deniable.aggregator.questions._planning import compared_plan, plan_outcome
from deniable.aggregator.questions._text import (
    assumed,
    mechanism_summary,
    privacy_per_answer,
    ratio_text,
    transport_line,
)
from deniable.shared.mechanisms import FrequencyOracle, Mechanism
from deniable.shared.stats import ESTIMANDS
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["CATEGORICAL_ANALYSIS", "CategoricalAnalysis"]


class CategoricalAnalysis(QuestionAnalysis):
    """One of k options: shares planned per option, simulated from true option shares."""

    kind = "categorical"
    plan_inputs = frozenset({"share"})

    sweeps = True
    sweep_note = " (mean over options)"

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """Every multiple-choice mechanism compared on one option's share."""
        result = compared_plan(question, request)
        what = f"one option's share ({result.k} options, {assumed(result)})"
        return plan_outcome(result, what, ".4f")

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """True option shares ``--distribution`` (e.g. 0.5,0.3,0.2)."""
        if request.distribution is None:
            raise ValueError("--type categorical needs --distribution (e.g. 0.5,0.3,0.2)")
        oracle = cast(FrequencyOracle, mechanism)  # the type's contract
        names = tuple(question.categorical.options)
        shares = check_shares(parse_shares(request.distribution), len(names))
        return _Categorical(oracle, names, shares, request)

    def accuracy(self, result: CategoricalSimulation) -> Accuracy:
        """RMSE, width and coverage averaged over the options (each option's share alone)."""
        rows = result.per_option
        error = math.sqrt(
            math.fsum(rmse(r.mean_estimate_raw - r.share, r.std_estimate_raw) ** 2 for r in rows)
            / len(rows)
        )
        width = math.fsum(r.mean_width for r in rows) / len(rows)
        coverage = math.fsum(r.coverage or 0.0 for r in rows) / len(rows)
        return Accuracy(error, width, coverage, result.repeats)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """An option per row, drawn with the estimated option shares."""
        return _categorical_sampler(question, estimate)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """Each option's share as a bar with its interval, and the numbers behind them."""
        rows = intervals(data["options"])
        title = f"{question.id}: share of each option"
        chart = interval_chart(rows, 0.0, 1.0, title=title, bars=True)
        support = [f"{o['support']:,}" for o in data["options"]]
        header = ("option", "share", "interval", "supporting reports")
        return chart + number_table(header, rows, support)

    def quantities(self, estimate: pb.Estimate) -> Iterator[dict[str, Any]]:
        """A row per option's share."""
        for option in estimate.options:
            yield {"quantity": "option", "label": option.option, **interval_fields(option)}

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """A line per option."""
        option_lines(row, emit)


class _Categorical(Simulation):
    def __init__(
        self,
        oracle: FrequencyOracle,
        names: tuple[str, ...],
        shares: tuple[float, ...],
        request: SimulationRequest,
    ) -> None:
        self.oracle, self.names, self.shares, self.request = oracle, names, shares, request

    def run(self, transport: Transport) -> Outcome:
        request = self.request
        submit = None
        if transport.grpc:
            submit = transport.stack.enter_context(
                categorical_grpc_submitter(
                    self.oracle,
                    options=self.names,
                    method=request.method,
                    **transport.submitting(request.confidence),
                )
            )
        result = simulate_categorical(
            request.participants, self.shares, self.oracle, options=self.names,
            repeats=request.repeats, confidence=request.confidence, method=request.method,
            seed=request.seed, progress=transport.repeated, submit=submit,
        )  # fmt: skip
        grpc_info = submit.summary() if submit is not None else None
        document = {"type": "categorical", **result.to_dict(), "grpc": grpc_info}
        return Outcome(document, lambda emit: _show(result, grpc_info, emit), result)


def _show(result: CategoricalSimulation, grpc_info: dict[str, Any] | None, emit: Emit) -> None:
    first, rows = result.first, result.per_option
    emit(
        f"Simulated {result.participants:,} participants choosing among {len(rows)} options "
        f"(randomness: {result.randomness})"
    )
    emit(f"Mechanism: {mechanism_summary(result.mechanism)}")
    emit(privacy_per_answer(first.epsilon))
    width = max(6, *(len(name) for name in result.options))
    emit(
        f"  {'option':<{width}} {'true':>7} {'sample':>7} {'estimate':>9} {'raw':>8} "
        f"{'std err':>8}  {first.confidence:.0%} CI"
    )
    for v, row in enumerate(rows):
        emit(
            f"  {row.option:<{width}} {row.share:>7.4f} {row.sample_share:>7.4f} "
            f"{first.estimate[v]:>9.4f} {first.estimate_raw[v]:>8.4f} {first.std_error[v]:>8.4f}"
            f"  [{first.ci_low[v]:.4f}, {first.ci_high[v]:.4f}]"
        )
    emit(
        f"Intervals: {first.method}, one per option (not simultaneous), each containing its "
        f"estimate; estimand: {ESTIMANDS[first.estimand]}; estimate = raw estimates projected "
        "onto the simplex"
    )
    if result.repeats > 1:
        _repeats(result, width, grpc_info is None, emit)
    if grpc_info is not None:
        emit(transport_line(grpc_info, "the estimates above were"))


def _repeats(result: CategoricalSimulation, width: int, in_process: bool, emit: Emit) -> None:
    first, rows = result.first, result.per_option
    emit(f"Over {result.repeats:,} repeats (theory: the mechanism's variance at the truth):")
    emit(
        f"  {'option':<{width}} {'coverage ± MC SE':>17} {'exact':>7} {'mean raw':>9} "
        f"{'std raw':>8} {'theory':>8} {'var/theory':>10}"
    )
    for row in rows:
        assert row.coverage is not None
        assert row.coverage_se is not None
        assert row.variance_empirical is not None
        assert row.std_estimate_raw is not None
        ratio = ratio_text(row.variance_empirical, row.variance_theory)
        emit(
            f"  {row.option:<{width}} {row.coverage:>8.4f} ± {row.coverage_se:.4f} "
            f"{row.coverage_exact:>7.4f} {row.mean_estimate_raw:>9.4f} "
            f"{row.std_estimate_raw:>8.4f} {row.std_theory:>8.4f} {ratio:>10}"
        )
    emit(looks_line(result.looks, first.confidence, "an option's interval (the worst)"))
    tail = (
        f"  nominal coverage {first.confidence:g}; exact: summed over the binomial pmf "
        "(before widening to the estimate, so a lower bound)"
    )
    if in_process:
        tail += f"; throughput {result.reports_per_second:,.0f} reports/s in-process"
    emit(tail)
    if result.joint_coverage is None or result.simultaneous_coverage is None:
        return
    k = len(result.per_option)
    emit(
        f"All {k} options covered at once: per-option intervals {result.joint_coverage:.4f} "
        f"± {result.joint_coverage_se:.4f}; simultaneous intervals (--simultaneous) "
        f"{result.simultaneous_coverage:.4f} ± {result.simultaneous_coverage_se:.4f} "
        f"(mean width {math.fsum(result.simultaneous_mean_width) / k:.4f})"
    )


def _categorical_sampler(question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
    options = list(question.categorical.options)
    shares = shares_of([o.estimate for o in estimate.options], len(options), question)
    labels = np.asarray(options, dtype=object)

    def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
        return [labels[rng.choice(len(options), size=n, p=shares)].tolist()]

    method = "multiple choice: an option drawn with the estimated option shares (projected)"
    return single_column(question, method, draw)


CATEGORICAL_ANALYSIS = register_analysis(CategoricalAnalysis())
