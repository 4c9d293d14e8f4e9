"""Multi-select on the aggregator's side: item shares, pairs and conditional shares."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from deniable.aggregator.analysis.planning import margin_for, smallest_n
from deniable.aggregator.analysis.publishing import (
    MAX_FITTED_ITEMS,
    Column,
    QuestionSampler,
    fit_max_entropy,
)
from deniable.aggregator.analysis.simulation import (
    MultiSelectGrpcSubmitter,
    MultiSelectSimulation,
    SetDistribution,
    simulate_multi_select,
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
from deniable.aggregator.questions._estimate_text import estimate_line
from deniable.aggregator.questions._multi_select_estimate import (
    multi_select_chart,
    multi_select_fields,
    multi_select_lines,
)
from deniable.aggregator.questions._planning import compared_plan, plan_outcome
from deniable.aggregator.questions._text import assumed, mechanism_summary, transport_line
from deniable.shared.mechanisms import ItemRandomizedResponse, Mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MULTI_SELECT_ANALYSIS", "MultiSelectAnalysis"]


class MultiSelectAnalysis(QuestionAnalysis):
    """Any set of k items: one item's share and a pair's co-occurrence planned and simulated."""

    kind = "multi_select"
    plan_inputs = frozenset({"share"})

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """Every multi-select mechanism on one item's share, and a pair's co-occurrence."""
        result = compared_plan(question, request)
        # The pair's variance is the selected mechanism's (the question's, at its ε).
        variance = cast(ItemRandomizedResponse, mechanism).pair_variance
        if result.target_margin is not None:
            n = smallest_n(result.target_margin, result.confidence, variance)
        else:
            n = result.participants
        pair = {
            "participants": n,
            "margin": margin_for(n, result.confidence, variance),
            "variance_one": variance(1),
        }

        def after(emit: Emit) -> None:
            emit(
                f"A pair's co-occurrence (share choosing both of two items; worst case, "
                f"Var1 {pair['variance_one']:.5g}): {pair['participants']:,} participants "
                f"for ±{pair['margin']:.4f}"
            )

        what = f"one item's share ({result.k} items, {assumed(result)})"
        return plan_outcome(result, what, ".4f", {"pair": pair}, after)

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """Each participant's set drawn from ``--distribution`` (sets and probabilities)."""
        if request.distribution is None:
            raise ValueError(
                "--type multi_select needs --distribution: sets and their probabilities, "
                "e.g. a+b:0.3,a:0.2,none:0.5"
            )
        names = tuple(question.multi_select.items)
        sets = SetDistribution.parse(request.distribution, names)
        return _MultiSelect(cast(ItemRandomizedResponse, mechanism), names, sets, request)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """Each row's set drawn keeping the item shares and their co-occurrences."""
        return _multi_select_sampler(question, estimate)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """Each item's share with its interval, and the co-occurrence matrix as a heat map."""
        return multi_select_chart(question.id, data)

    def quantities(self, estimate: pb.Estimate) -> Iterator[dict[str, Any]]:
        """A row per item's share, and per pair's co-occurrence (normal intervals)."""
        for item in estimate.items:
            yield {"quantity": "item", "label": item.option, **interval_fields(item)}
        for pair in estimate.pairs:
            label = f"{pair.first} & {pair.second}"
            yield {"quantity": "pair", "label": label, **interval_fields(pair), "method": "normal"}

    def estimate_fields(self, estimate: pb.Estimate, data: dict[str, Any]) -> None:
        """Item shares, pairs, the co-occurrence matrices and any conditional share."""
        multi_select_fields(estimate, data)

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """Each item's share, the co-occurrence table and any conditional share."""
        multi_select_lines(row, emit, estimate_line)


class _MultiSelect(Simulation):
    def __init__(
        self,
        spec: ItemRandomizedResponse,
        names: tuple[str, ...],
        sets: SetDistribution,
        request: SimulationRequest,
    ) -> None:
        self.spec, self.names, self.sets, self.request = spec, names, sets, request

    def run(self, transport: Transport) -> Outcome:
        request = self.request
        submit: MultiSelectGrpcSubmitter | None = None
        if transport.grpc:
            client, address = transport.connect()
            submit = MultiSelectGrpcSubmitter(
                client, self.spec, address, request.confidence, request.method,
                transport.batch_size, embedded=transport.server is None, options=self.names,
                progress=transport.sent,
            )  # fmt: skip
        result = simulate_multi_select(
            request.participants, self.sets, self.spec, items=self.names,
            repeats=request.repeats, confidence=request.confidence, method=request.method,
            seed=request.seed, progress=transport.repeated, submit=submit,
        )  # fmt: skip
        grpc_info = submit.summary() if submit is not None else None
        document = {"type": "multi_select", **result.to_dict(), "grpc": grpc_info}
        return Outcome(document, lambda emit: _show(result, grpc_info, emit), result)


def _coverage(value: float | None, repeats: int) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}±{math.sqrt(value * (1 - value) / repeats):.3f}"


def _show(result: MultiSelectSimulation, grpc_info: dict[str, Any] | None, emit: Emit) -> None:
    first, names = result.first, result.items
    k = len(names)
    emit(
        f"Simulated {result.participants:,} participants choosing sets of {k} items "
        f"(randomness: {result.randomness})"
    )
    emit(f"Mechanism: {mechanism_summary(result.mechanism)}")
    emit(
        f"Privacy: epsilon = {result.mechanism['epsilon']:.4f} per answer (exact), "
        f"{result.mechanism['epsilon_per_item']:.4f} per item"
    )
    emit("True sets: " + ", ".join(f"{name} {p:.4g}" for name, p in result.distribution.items()))
    width = max(6, *(len(name) for name in names))
    emit(f"  {'item':<{width}} {'true':>7} {'estimate':>9}  {result.confidence:.0%} CI")
    for i, name in enumerate(names):
        emit(
            f"  {name:<{width}} {result.true_pairs[i][i]:>7.4f} {first['estimate'][i]:>9.4f}"
            f"  [{first['ci_low'][i]:.4f}, {first['ci_high'][i]:.4f}]"
        )
    emit("Co-occurrence (share choosing both): true / estimate")
    emit(f"  {'':<{width}}" + "".join(f"{name[:15]:>17}" for name in names))
    for i, name in enumerate(names):
        pair = first["pair_estimate"][i]
        cells = "".join(f"{f'{result.true_pairs[i][j]:.4f}/{pair[j]:.4f}':>17}" for j in range(k))
        emit(f"  {name:<{width}}{cells}")
    if result.repeats > 1:
        runs = result.repeats
        emit(f"Coverage over {runs:,} repeats (± Monte Carlo standard error):")
        emit(
            "  items: "
            + ", ".join(
                f"{name} {_coverage(c, runs)}"
                for name, c in zip(names, result.item_coverage, strict=True)
            )
        )
        pairs = [
            f"{names[i]}+{names[j]} {_coverage(result.pair_coverage[i][j], runs)}"
            for i in range(k)
            for j in range(i + 1, k)
        ]
        emit("  pairs: " + ", ".join(pairs))
        conditional = [
            f"{names[j]} given {names[i]} {_coverage(result.conditional_coverage[i][j], runs)}"
            for i in range(k)
            for j in range(k)
            if i != j
        ]
        emit("  conditional: " + ", ".join(conditional))
    emit(
        f"Intervals: items {result.method} (exact binomial); pairs and conditional shares "
        "normal approximation with plug-in variances (delta method for the conditional)"
    )
    if grpc_info is not None:
        emit(transport_line(grpc_info, "the tallies above were"))


def _multi_select_sampler(question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
    items = list(question.multi_select.items)
    k = len(items)
    if len(estimate.items) != k:
        raise ValueError(
            f"question {question.id!r}: its estimate has {len(estimate.items)} items, the "
            f"question {k}"
        )
    p = [min(1.0, max(0.0, item.estimate)) for item in estimate.items]
    notes: list[str] = []
    if k <= MAX_FITTED_ITEMS:
        pairs = [[0.0] * k for _ in range(k)]
        for pair in estimate.pairs:
            i, j = items.index(pair.first), items.index(pair.second)
            pairs[i][j] = pairs[j][i] = pair.estimate
        probs, clipped, shrink, gap = fit_max_entropy(p, pairs)
        if clipped:
            notes.append(
                f"{clipped} pair co-occurrence(s) outside what the item shares allow were "
                "clipped to their bounds [max(0, pi + pj - 1), min(pi, pj)] before the fit"
            )
        if shrink == 0.0 and gap > 1e-6:
            notes.append(
                f"the targets are at the edge of what is feasible: the fitted shares are "
                f"within {gap:.2g} of them"
            )
        if shrink > 0.0:
            notes.append(
                "the co-occurrences are not all feasible together: each was moved "
                f"{shrink:.0%} of the way toward independence (pi·pj) to fit; the fitted "
                f"shares miss those targets by up to {gap:.3g}"
            )
        sets = np.arange(2**k)

        def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
            chosen = rng.choice(sets, size=n, p=probs)
            return [np.where((chosen >> i) & 1 == 1, "1", "0").tolist() for i in range(k)]

        method = (
            "multi-select item (1 chosen, 0 not): each row's set drawn from the maximum-entropy "
            f"distribution over the 2^{k} sets with the estimated item shares and pairwise "
            "co-occurrences (iterative proportional fitting; infeasible targets clipped "
            "first), so the items' co-occurrences are kept"
        )
    else:

        def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
            return [np.where(rng.random(n) < share, "1", "0").tolist() for share in p]

        notes.append(
            f"limitation: {k} items are more than {MAX_FITTED_ITEMS}, so the items are drawn "
            "independently: their shares are kept, their co-occurrences are not"
        )
        method = (
            "multi-select item (1 chosen, 0 not): Bernoulli(the item's estimated share), "
            f"independent of the other items (more than {MAX_FITTED_ITEMS} items)"
        )
    columns = tuple(Column(f"{question.id}:{item}", question.id, method) for item in items)
    return QuestionSampler(question.id, columns, tuple(notes), draw)


MULTI_SELECT_ANALYSIS = register_analysis(MultiSelectAnalysis())
