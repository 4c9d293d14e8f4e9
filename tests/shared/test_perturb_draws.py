"""Numeric perturbation draws the same randomness whatever the true value.

The time a perturbation takes follows the random bytes it reads (how many calls, how many
bytes each), so these are counted instead of timed: with the same seed, every true value
of the domain, its ends and grid points included, must read exactly the same sequence of
byte counts from the source, one value at a time and in batches. The same per (true value,
report), for every mechanism and the curator: ``tests/attacks/test_randomness_by_outcome.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    NumericMechanism,
    PiecewiseMechanism,
)
from deniable.shared.sampling import bernoulli_rational, generator_source
from tests.shared._sources import CountingGenerator

SEEDS = range(40)


def draws(mechanism: NumericMechanism, truths: list[float], seed: int) -> tuple[int, ...]:
    rng = CountingGenerator(seed)
    mechanism.perturb_many(truths, rng)
    return tuple(rng.calls)


def domain(mechanism: NumericMechanism) -> list[float]:
    """Ends, the midpoint, grid points of every mechanism here, and awkward floats."""
    lo, hi = mechanism.lo, mechanism.hi
    span = hi - lo
    fractions = [0.0, 1.0, 0.5, 0.25, 0.75, 1 / 3, 0.1, 2**-30, 1 - 2**-52, 0.123456789]
    return [lo + f * span for f in fractions] + [lo, hi, float(np.nextafter(hi, lo))]


MECHANISMS: list[NumericMechanism] = [
    LaplaceMechanism.from_epsilon(0.0, 100.0, 1.0),
    LaplaceMechanism.from_epsilon(-8.0, 8.0, 4.0),
    DuchiMechanism.from_epsilon(0.0, 100.0, 1.0),
    PiecewiseMechanism.from_epsilon(0.0, 100.0, 1.0),
    PiecewiseMechanism.from_epsilon(-1.0, 1.0, 5.0),
    HybridMechanism.from_epsilon(0.0, 100.0, 1.0),
    HybridMechanism.from_epsilon(-3.0, 9.0, 3.0),
]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_one_report_draws_the_same_bytes_whatever_the_true_value(
    mechanism: NumericMechanism,
) -> None:
    values = domain(mechanism)
    for seed in SEEDS:
        seen = {value: draws(mechanism, [value], seed) for value in values}
        assert len(set(seen.values())) == 1, (seed, seen)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_a_batch_draws_the_same_bytes_whatever_the_true_values(
    mechanism: NumericMechanism,
) -> None:
    values = domain(mechanism)
    batches = [[value] * 64 for value in values]  # all at one end, all mid-range, ...
    batches.append([values[i % len(values)] for i in range(64)])  # and mixed
    for seed in SEEDS[:10]:
        assert len({draws(mechanism, batch, seed) for batch in batches}) == 1, seed


def test_fixed_reads_read_a_digit_even_at_probability_zero_or_one() -> None:
    for numerators in ([0, 0, 0], [7, 7, 7], [3, 0, 7], [1, 2, 3]):
        for seed in range(20):  # every first word: certain draws ignore it
            rng = CountingGenerator(seed)
            drawn = bernoulli_rational(numerators, 7, generator_source(rng), fixed_reads=True)
            assert rng.calls == [24], numerators
            assert not drawn[np.array(numerators) == 0].any()
            assert drawn[np.array(numerators) == 7].all()
