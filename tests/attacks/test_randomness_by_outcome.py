"""The randomness a perturbation reads says nothing about the true value or the report.

Adversary: whoever observes the participant's device while it perturbs an answer (a
co-resident process counting ``getrandom`` calls and their sizes, or timing the client,
whose running time follows the bytes it reads and the loops that read them), or whoever
times the curator's noisy releases. Assumption: the adversary sees the report (or the
release) too, so reads that differ between a report equal to the truth and one that is not
would tell which one it is, and reads that grow with |noise| would tell report − noise.

The experiment: a seeded source that records the size of every read; for many seeds and
every true value, perturb, and file the sequence of read sizes under (true value, what the
report says about it). Every mechanism must read one and the same sequence in every group,
whatever the seed (draws are padded to a fixed size; the events that read more, ties of a
uniform with a probability's digits and the discrete Laplace's far tail, have probability
below 2^-64 per draw and never happen here).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from deniable.aggregator.central.curator import central_laplace_count
from deniable.shared.mechanisms import (
    DuchiMechanism,
    GeneralizedRandomizedResponse,
    HybridMechanism,
    ItemRandomizedResponse,
    LaplaceMechanism,
    NumericMechanism,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    RandomizedResponse,
)
from deniable.shared.mechanisms._universal_hash import hash_unchecked
from deniable.shared.sampling import discrete_laplace, generator_source
from tests.shared._sources import CountingGenerator

Groups = dict[Hashable, set[tuple[int, ...]]]


def observe(
    perturb: Callable[[Any, np.random.Generator], Any],
    truths: Sequence[Any],
    outcome: Callable[[Any, Any], Hashable],
    seeds: range,
) -> Groups:
    """Read sequences filed under (truth, outcome of the report), over seeds and truths."""
    groups: Groups = defaultdict(set)
    for seed in seeds:
        for truth in truths:
            rng = CountingGenerator(seed)
            report = perturb(truth, rng)
            groups[(truth, outcome(truth, report))].add(tuple(rng.calls))
    return groups


def assert_one_sequence(groups: Groups) -> None:
    """One read sequence in every (truth, outcome) group: reads tell the adversary nothing."""
    every = set().union(*groups.values())
    shown = {key: sorted(reads)[:2] for key, reads in list(groups.items())[:4]}
    assert len(every) == 1, f"{len(every)} read sequences, e.g. by (truth, outcome): {shown}"


def calls_of(mechanism: Any, batch: list[Any], seed: int) -> list[int]:
    """The read sizes of one ``perturb_many`` call on a batch."""
    rng = CountingGenerator(seed)
    mechanism.perturb_many(batch, rng)
    return rng.calls


# --- frequency oracles: is the report the truth? -------------------------------------------


def kept(truth: Any, report: Any) -> Hashable:
    return bool(np.all(np.asarray(report) == np.asarray(truth)))


def test_yes_no_reads_do_not_tell_a_kept_answer_from_a_flipped_one() -> None:
    rr = RandomizedResponse.from_epsilon(1.0)
    assert_one_sequence(observe(rr.perturb, [False, True], kept, range(2000)))


@pytest.mark.parametrize(("k", "epsilon"), [(8, 1.9), (5, 1.0), (6, 3.0), (200, 0.5)])
def test_grr_reads_do_not_tell_a_kept_option_from_a_replaced_one(k: int, epsilon: float) -> None:
    """The case of the report is k = 8, ε = 1.9; k = 6 is a joint question of 2 × 3 cells."""
    grr = GeneralizedRandomizedResponse.from_epsilon(k, epsilon)
    truths = list(range(k)) if k <= 8 else [0, 1, k // 2, k - 1]
    assert_one_sequence(observe(grr.perturb, truths, kept, range(300)))


def test_olh_reads_do_not_tell_a_kept_hash_from_a_replaced_one() -> None:
    olh = OptimizedLocalHashing.from_epsilon(8, 1.9)

    def hash_kept(truth: Any, report: Any) -> Hashable:
        a, b, y = report
        a_, b_, x_ = (np.array([value], dtype=np.uint64) for value in (a, b, truth))
        return bool(int(hash_unchecked(a_, b_, x_, olh.g)[0]) == int(y))

    assert_one_sequence(observe(olh.perturb, list(range(8)), hash_kept, range(300)))


@pytest.mark.parametrize("k", [4, 9])
def test_oue_reads_do_not_depend_on_the_bits_reported(k: int) -> None:
    oue = OptimizedUnaryEncoding.from_epsilon(k, 1.0)
    bits: Callable[[Any, Any], Hashable] = lambda truth, report: tuple(report.tolist())  # noqa: E731
    assert_one_sequence(observe(oue.perturb, list(range(k)), bits, range(300)))


def test_multi_select_reads_do_not_depend_on_the_bits_flipped() -> None:
    rr = ItemRandomizedResponse.from_epsilon(3, 2.0)
    flips: Callable[[Any, Any], Hashable] = lambda truth, report: tuple(report.tolist())  # noqa: E731
    assert_one_sequence(observe(rr.perturb, list(range(8)), flips, range(300)))


def test_batches_read_the_same_whatever_the_answers_and_reports() -> None:
    """A batch of reports, as simulations perturb them: one sequence for every batch."""
    rr = RandomizedResponse.from_epsilon(2.0)
    grr = GeneralizedRandomizedResponse.from_epsilon(5, 1.0)
    for mechanism, truths in ((rr, [False, True]), (grr, [0, 2, 4])):
        batches = [[truth] * 64 for truth in truths]
        seen = {tuple(calls_of(mechanism, batch, seed)) for batch in batches for seed in range(60)}
        assert len(seen) == 1, (mechanism, seen)


# --- numeric mechanisms: how far is the report from the truth? -----------------------------


def distance(mechanism: NumericMechanism) -> Callable[[Any, Any], Hashable]:
    """The report's distance from the normalized truth, in powers of two of grid steps."""

    def bucket(truth: Any, report: Any) -> Hashable:
        t = 2 * (truth - mechanism.lo) / (mechanism.hi - mechanism.lo) - 1
        step = float(getattr(mechanism, "grid_step", 1.0))
        return int(abs(report - t) / step).bit_length()

    return bucket


NUMERIC: list[NumericMechanism] = [
    LaplaceMechanism.from_epsilon(0.0, 100.0, 1.0),
    LaplaceMechanism.from_epsilon(-8.0, 8.0, 4.0, grid_bits=3),
    DuchiMechanism.from_epsilon(0.0, 100.0, 1.0),
    PiecewiseMechanism.from_epsilon(0.0, 100.0, 1.0),
    PiecewiseMechanism.from_epsilon(-1.0, 1.0, 5.0),
    HybridMechanism.from_epsilon(0.0, 100.0, 1.0),
    HybridMechanism.from_epsilon(-3.0, 9.0, 3.0),
]


@pytest.mark.parametrize("mechanism", NUMERIC, ids=repr)
def test_numeric_reads_do_not_depend_on_the_noise(mechanism: NumericMechanism) -> None:
    lo, hi = mechanism.lo, mechanism.hi
    truths = [lo, hi, (lo + hi) / 2, lo + (hi - lo) / 3]
    assert_one_sequence(observe(mechanism.perturb, truths, distance(mechanism), range(150)))


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(5, 2), Fraction(1024), Fraction(10**9)])
def test_discrete_laplace_reads_do_not_grow_with_the_noise(scale: Fraction) -> None:
    groups: Groups = defaultdict(set)
    for seed in range(400):
        rng = CountingGenerator(seed)
        noise = int(discrete_laplace(scale, 1, generator_source(rng))[0])
        groups[abs(noise).bit_length()].add(tuple(rng.calls))
    assert len(groups) > 2  # the noise did vary
    assert_one_sequence(groups)


# --- the curator: a released count against the true one ------------------------------------


def test_curator_reads_do_not_depend_on_the_count_or_the_noise() -> None:
    """Whoever times the curator's answers learns nothing of the count or the noise drawn."""

    def release(true: Any, rng: np.random.Generator) -> Any:
        return central_laplace_count(true, 0.5, upper=40, source=generator_source(rng)).released

    noise: Callable[[Any, Any], Hashable] = lambda true, released: abs(released - true)  # noqa: E731
    assert_one_sequence(observe(release, [0, 1, 20, 40], noise, range(200)))
