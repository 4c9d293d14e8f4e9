"""Synthetic tables: max-entropy fits and draws reproduce the estimates they come from."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deniable.aggregator.analysis.publishing._synthesize import (
    MAX_FITTED_ITEMS,
    fit_max_entropy,
    max_entropy_rate,
    sample_max_entropy,
)
from deniable.aggregator.questions import plan_synthesis
from deniable.shared.wire.v1 import aggregator_pb2 as pb

Z = 5.0
N = 50_000


def tol(p: float, n: int = N) -> float:
    return Z * math.sqrt(p * (1.0 - p) / n) + 1e-12


def shares_of_sets(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    bits = ((np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1).astype(float)
    items = probs @ bits
    pairs = bits.T @ (bits * probs[:, None])
    return items, pairs


def test_the_fit_matches_feasible_item_and_pair_shares_with_the_most_entropy() -> None:
    rng = np.random.default_rng(5)
    k = 5
    truth = rng.dirichlet(np.ones(2**k))  # any distribution: its shares are feasible
    items, pairs = shares_of_sets(truth, k)
    probs, clipped, shrink, gap = fit_max_entropy(items.tolist(), pairs.tolist())
    assert (clipped, shrink) == (0, 0.0)
    assert gap <= 1e-9
    fitted_items, fitted_pairs = shares_of_sets(probs, k)
    assert np.abs(fitted_items - items).max() <= 1e-8
    assert np.abs(fitted_pairs - pairs).max() <= 1e-8
    entropy = -float(np.sum(probs * np.log(np.where(probs > 0, probs, 1.0))))
    assert entropy >= -float(np.sum(truth * np.log(truth))) - 1e-9  # at least the truth's


def test_independent_targets_fit_the_product_distribution() -> None:
    p = [0.2, 0.5, 0.7]
    pairs = [[p[i] * p[j] for j in range(3)] for i in range(3)]
    probs, *_ = fit_max_entropy(p, pairs)
    for s in range(8):
        expected = math.prod(p[i] if s >> i & 1 else 1 - p[i] for i in range(3))
        assert abs(probs[s] - expected) <= 1e-9


def test_infeasible_pairs_are_clipped_then_shrunk_toward_independence() -> None:
    # Above min(pi, pj): clipped to it. a = b and b = c but never a and c: not all feasible.
    probs, clipped, shrink, gap = fit_max_entropy(
        [0.5, 0.5, 0.5], [[0, 0.7, 0.0], [0.7, 0, 0.5], [0.0, 0.5, 0]]
    )
    assert clipped == 1
    assert 0.0 < shrink <= 1.0
    assert gap <= 1e-3
    assert abs(probs.sum() - 1.0) <= 1e-12
    items, _ = shares_of_sets(probs, 3)
    assert np.abs(items - 0.5).max() <= 1e-3  # the item shares are kept


def test_targets_on_the_edge_of_feasible_are_fitted_closely_and_said() -> None:
    # Feasible only with every set of all three at 0.05 and apples-plums-only at 0.
    survey, estimates = survey_and_estimates()
    del estimates["fruit"].pairs[:]
    for first, second, share in (("apples", "pears", 0.45), ("apples", "plums", 0.05),
                                 ("pears", "plums", 0.1)):  # fmt: skip
        estimates["fruit"].pairs.add(first=first, second=second, estimate=share)
    plan = plan_synthesis(survey, estimates)
    assert len(plan.notes) == 1
    assert plan.notes[0].startswith("fruit: the targets are at the edge of what is feasible")
    _, clipped, shrink, gap = fit_max_entropy(
        [0.6, 0.5, 0.2], [[0, 0.45, 0.05], [0.45, 0, 0.1], [0.05, 0.1, 0]]
    )
    assert (clipped, shrink) == (0, 0.0)
    assert 1e-6 < gap <= 1e-3


def test_the_fit_refuses_too_many_items() -> None:
    k = MAX_FITTED_ITEMS + 1
    with pytest.raises(ValueError, match=f"items: fit 2..12 items, got {k}"):
        fit_max_entropy([0.5] * k, [[0.25] * k] * k)


@pytest.mark.parametrize("t", [0.02, 0.25, 0.5, 0.6, 0.97])
def test_the_max_entropy_number_has_the_mean_and_stays_in_range(t: float) -> None:
    draws = sample_max_entropy(10.0, 30.0, 10.0 + 20.0 * t, np.random.default_rng(1), N)
    assert draws.min() >= 10.0
    assert draws.max() <= 30.0
    assert abs(draws.mean() - (10.0 + 20.0 * t)) <= Z * 20.0 * draws.std() / 20.0 / math.sqrt(N)
    rate = max_entropy_rate(t)
    assert rate == 0.0 if t == 0.5 else (rate > 0) == (t > 0.5)
    # The density is exp(λu) on [0, 1]: the share below the middle is (e^{λ/2} − 1)/(e^λ − 1).
    below = 0.5 if rate == 0.0 else math.expm1(rate / 2) / math.expm1(rate)
    assert abs(float(np.mean(draws < 20.0)) - below) <= tol(below)


def test_a_mean_at_a_bound_gives_that_bound() -> None:
    rng = np.random.default_rng(0)
    assert set(sample_max_entropy(0.0, 1.0, 0.0, rng, 100).tolist()) == {0.0}
    assert set(sample_max_entropy(0.0, 1.0, 1.0, rng, 100).tolist()) == {1.0}
    with pytest.raises(ValueError, match="mean must be strictly inside"):
        max_entropy_rate(1.0)


def survey_and_estimates() -> tuple[pb.Survey, dict[str, pb.Estimate]]:
    survey = pb.Survey(id="s", title="T")
    joint = survey.questions.add(id="work")
    joint.joint.parts.add(id="remote").binary.SetInParent()
    joint.joint.parts.add(id="hours").numeric.edges.extend([0.0, 20.0, 40.0, 60.0])
    multi = survey.questions.add(id="fruit")
    multi.multi_select.items.extend(["apples", "pears", "plums"])
    cells = [0.30, 0.15, 0.05, 0.05, 0.15, 0.30]  # remote goes with more hours
    work = pb.Estimate(question_id="work")
    for name, share in zip(
        [f"remote={r}, hours={h}" for r in ("no", "yes") for h in ("a", "b", "c")],
        cells,
        strict=True,
    ):
        work.options.add(option=name, estimate=share)
    fruit = pb.Estimate(question_id="fruit")
    items = {"apples": 0.6, "pears": 0.5, "plums": 0.2}
    both = {("apples", "pears"): 0.35, ("apples", "plums"): 0.1, ("pears", "plums"): 0.1}
    for name, share in items.items():
        fruit.items.add(option=name, estimate=share)
    for (first, second), share in both.items():
        fruit.pairs.add(first=first, second=second, estimate=share)
    return survey, {"work": work, "fruit": fruit}


def test_joint_cells_and_multi_select_pairs_are_reproduced_by_the_table() -> None:
    survey, estimates = survey_and_estimates()
    plan = plan_synthesis(survey, estimates)
    assert [c.name for c in plan.columns] == [
        "work:remote", "work:hours", "fruit:apples", "fruit:pears", "fruit:plums",
    ]  # fmt: skip
    assert "uniform within its drawn bin" in plan.columns[1].method
    assert "uniform within" not in plan.columns[0].method
    assert plan.notes == ()
    rows = list(plan.rows(np.random.default_rng(2), N, chunk=7_000))
    assert len(rows) == N
    remote = np.array([row[0] == "yes" for row in rows])
    hours = np.array([float(row[1]) for row in rows])
    bins = np.digitize(hours, [20.0, 40.0])
    for index, share in enumerate(estimates["work"].options):
        r, h = divmod(index, 3)
        synthetic = float(np.mean((remote == bool(r)) & (bins == h)))
        assert abs(synthetic - share.estimate) <= tol(share.estimate)
    for h, (lo, hi) in enumerate(itertools.pairwise([0.0, 20.0, 40.0, 60.0])):
        within = hours[bins == h]
        assert within.min() >= lo
        assert within.max() <= hi
        assert abs(float(within.mean()) - (lo + hi) / 2) <= Z * 20 / math.sqrt(12 * len(within))
    chosen = np.array([[row[i] == "1" for i in (2, 3, 4)] for row in rows])
    for i, item in enumerate(estimates["fruit"].items):
        assert abs(float(chosen[:, i].mean()) - item.estimate) <= tol(item.estimate)
    names = ["apples", "pears", "plums"]
    for pair in estimates["fruit"].pairs:
        i, j = names.index(pair.first), names.index(pair.second)
        synthetic = float(np.mean(chosen[:, i] & chosen[:, j]))
        assert abs(synthetic - pair.estimate) <= tol(pair.estimate)


def test_many_items_are_drawn_independently_and_say_so() -> None:
    k = MAX_FITTED_ITEMS + 1
    survey = pb.Survey(id="s")
    survey.questions.add(id="many").multi_select.items.extend([f"i{n}" for n in range(k)])
    estimate = pb.Estimate(question_id="many")
    for n in range(k):
        estimate.items.add(option=f"i{n}", estimate=n / k)
    plan = plan_synthesis(survey, {"many": estimate})
    assert "independent of the other items" in plan.columns[0].method
    assert "limitation: 13 items are more than 12" in plan.notes[0]
    rows = np.array(list(plan.rows(np.random.default_rng(4), N)), dtype=object) == "1"
    for n in range(k):
        assert abs(float(rows[:, n].mean()) - n / k) <= tol(n / k)


def test_the_same_seed_gives_the_same_rows() -> None:
    survey, estimates = survey_and_estimates()
    plan = plan_synthesis(survey, estimates)
    first = list(plan.rows(np.random.default_rng(9), 500))
    assert first == list(plan.rows(np.random.default_rng(9), 500))
    assert first != list(plan.rows(np.random.default_rng(10), 500))


def test_bad_plans_and_row_counts_are_refused() -> None:
    survey, estimates = survey_and_estimates()
    with pytest.raises(ValueError, match="no estimate of question 'fruit'"):
        plan_synthesis(survey, {"work": estimates["work"]})
    del estimates["work"].options[-1]
    with pytest.raises(
        ValueError, match="question 'work': its estimate has 5 shares, its domain 6"
    ):
        plan_synthesis(survey, estimates)
    plan = plan_synthesis(pb.Survey(id="s"), {})
    for rows in (0, -1, 10_000_001):
        with pytest.raises(ValueError, match=f"rows must be 1..10,000,000, got {rows}"):
            list(plan.rows(np.random.default_rng(0), rows))
