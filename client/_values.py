"""True answers in, randomized report values out: one entry point for every kind of question."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deniable.client._categorical import categorical_mechanism
from deniable.client._numeric import perturb_numeric
from deniable.client._rr import RandomizedResponse
from deniable.shared._categorical import GrrSpec, OlhSpec, OueSpec
from deniable.shared._categorical_wire import encode_oue_bits
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._rr import RandomizedResponseSpec
from deniable.shared._wire import Spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["perturbed_values", "report_values"]


def perturbed_values(
    spec: Spec, truths: ArrayLike, rng: np.random.Generator | None = None
) -> list[dict[str, Any]]:
    """Randomize true answers locally; each result is a report's ``value`` field as kwargs.

    ``truths`` are yes/no answers (booleans) for randomized response, option indices for
    multiple choice, and numbers on [lo, hi] for numeric questions (out of range raises).
    Randomness is the OS CSPRNG unless a seeded Generator is passed (simulations, tests).

    Example:
        >>> [sorted(v) for v in perturbed_values(GrrSpec(3, 0.5), [0, 2])]
        [['option'], ['option']]
    """
    reports: Any
    if isinstance(spec, RandomizedResponseSpec):
        reports = RandomizedResponse(spec.alpha).perturb_many(truths, rng)
    elif isinstance(spec, CategoricalSpec):
        reports = categorical_mechanism(spec).perturb_many(truths, rng)
    else:
        reports = perturb_numeric(spec, truths, rng)
    return report_values(spec, reports)


def report_values(spec: Spec, reports: Any) -> list[dict[str, Any]]:
    """Perturbed reports, as the mechanisms' ``perturb_many`` return them, as ``value`` kwargs.

    ``reports`` are booleans (randomized response), option indices (GRR), rows of k bits
    (OUE), ``OlhReports`` (OLH) or numbers on the normalized scale (numeric mechanisms).

    Example:
        >>> report_values(GrrSpec(3, 0.5), np.array([2, 0]))
        [{'option': 2}, {'option': 0}]
    """
    if isinstance(spec, RandomizedResponseSpec):
        return [{"bit": bool(bit)} for bit in np.asarray(reports).tolist()]
    if isinstance(spec, CategoricalSpec):
        if isinstance(spec, GrrSpec):
            return [{"option": int(option)} for option in np.asarray(reports).tolist()]
        if isinstance(spec, OueSpec):
            return [{"bits": encode_oue_bits(row)} for row in np.asarray(reports)]
        if isinstance(spec, OlhSpec):
            a, b, y = reports
            return [
                {"hashed": pb.HashedOption(a=int(ai), b=int(bi), value=int(yi))}
                for ai, bi, yi in zip(a.tolist(), b.tolist(), y.tolist(), strict=True)
            ]
        raise TypeError(f"no report form for {type(spec).__name__}")  # pragma: no cover
    return [{"number": float(y)} for y in np.asarray(reports).ravel().tolist()]
