"""Exact samplers from uniform random bytes: the OS CSPRNG by default, seeded only for tests."""

from __future__ import annotations

import numpy as np

from deniable.shared.sampling._bernoulli import ByteSource, bernoulli, generator_source, os_source
from deniable.shared.sampling._discrete_laplace import discrete_laplace
from deniable.shared.sampling._dlaplace import bernoulli_exp, bernoulli_rational, geometric_exp
from deniable.shared.sampling._uniform import uniform_below

__all__ = [
    "ByteSource",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_rational",
    "discrete_laplace",
    "generator_source",
    "geometric_exp",
    "os_source",
    "source_for",
    "uniform_below",
]


def source_for(rng: np.random.Generator | None) -> ByteSource:
    """The byte source of a perturbation: ``os.urandom`` unless a seeded generator is given.

    A seeded ``numpy.random.Generator`` is for simulations and tests only; a participant's
    answers are always randomized with the operating system's CSPRNG.
    """
    return os_source if rng is None else generator_source(rng)
