"""Between wire messages and mechanism specs: one mapping for participants and aggregators."""

from __future__ import annotations

from typing import Any, TypeAlias

from deniable.shared._categorical import GrrSpec, OlhSpec, OueSpec
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._numeric import (
    DuchiSpec,
    HybridSpec,
    LaplaceSpec,
    NumericSpec,
    PiecewiseSpec,
    numeric_spec_from_description,
)
from deniable.shared._rr import RandomizedResponseSpec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "MECHANISMS_FOR",
    "VALUE_FOR",
    "Spec",
    "describe_mechanism",
    "mechanism_message",
    "question_kind",
    "question_spec",
]

Spec: TypeAlias = RandomizedResponseSpec | CategoricalSpec | NumericSpec
"""Any mechanism specification a question can carry."""

MECHANISMS_FOR: dict[str, tuple[str, ...]] = {
    "binary": ("randomized_response",),
    "categorical": ("grr", "oue", "olh"),
    "numeric": ("laplace", "duchi", "piecewise", "hybrid"),
}
"""The mechanisms (``Mechanism.kind``) each kind of question (``Question.kind``) admits."""

VALUE_FOR: dict[str, str] = {
    "randomized_response": "bit",
    "grr": "option",
    "oue": "bits",
    "olh": "hashed",
    "laplace": "number",
    "duchi": "number",
    "piecewise": "number",
    "hybrid": "number",
}
_NUMERIC_FIELDS = ("epsilon", "grid_bits", "bound", "center_cells", "outer_cells", "beta")
"""The report value (``Report.value``) each mechanism produces."""


def describe_mechanism(mechanism: pb.Mechanism) -> str:
    """A mechanism's kind and parameters in one line, e.g. ``grr (alpha 0.5)``."""
    kind = mechanism.WhichOneof("kind")
    if kind is None:
        return "no mechanism"
    fields = getattr(mechanism, kind).ListFields()
    return f"{kind} (" + ", ".join(f"{field.name} {value!r}" for field, value in fields) + ")"


def question_kind(question: pb.Question) -> str:
    """The kind of question (``binary``, ``categorical``), or raise naming the field."""
    kind = question.WhichOneof("kind")
    if kind is None:
        raise ValueError("kind: missing (binary, categorical or numeric)")
    return kind


def question_spec(question: pb.Question) -> Spec:
    """The validated mechanism of a question, from its parameters alone (never its ε).

    Raises:
        ValueError: the kind, the mechanism or a parameter is missing, unsupported or
            invalid; the message starts with the field's path inside the question.
    """
    kind = question_kind(question)
    mechanism = question.mechanism.WhichOneof("kind")
    expected = " or ".join(MECHANISMS_FOR.get(kind, ("?",)))
    if mechanism is None:
        raise ValueError(f"mechanism: missing (a {kind} question takes {expected})")
    if mechanism not in MECHANISMS_FOR.get(kind, ()):
        raise ValueError(
            f"mechanism: {mechanism} does not apply to a {kind} question (expected {expected})"
        )
    where = f"mechanism.{mechanism}"
    try:
        if mechanism == "randomized_response":
            return RandomizedResponseSpec(question.mechanism.randomized_response.alpha)
        if kind == "numeric":
            parameters = getattr(question.mechanism, mechanism)
            description = {
                name: getattr(parameters, name)
                for name in _NUMERIC_FIELDS
                if name in parameters.DESCRIPTOR.fields_by_name
            }
            return numeric_spec_from_description(
                {
                    "mechanism": mechanism,
                    "lo": question.numeric.min,
                    "hi": question.numeric.max,
                    **description,
                }
            )
        options = len(question.categorical.options)
        if mechanism == "grr":
            return GrrSpec(options, question.mechanism.grr.alpha)
        if mechanism == "oue":
            return OueSpec(options, question.mechanism.oue.q)
        olh = question.mechanism.olh
        return OlhSpec(options, olh.g, olh.alpha)
    except (ValueError, TypeError) as error:
        named = str(error).split(" ", 1)[0]  # spec errors start with the parameter's name
        if named in getattr(question.mechanism, mechanism).DESCRIPTOR.fields_by_name:
            where = f"{where}.{named}"
        raise ValueError(f"{where}: {error}") from None


def mechanism_message(spec: Spec) -> pb.Mechanism:
    """The wire form of a mechanism spec (the inverse of :func:`question_spec`)."""
    if isinstance(spec, RandomizedResponseSpec):
        return pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=spec.alpha))
    if isinstance(spec, GrrSpec):
        return pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=spec.alpha))
    if isinstance(spec, OueSpec):
        return pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=spec.q))
    if isinstance(spec, OlhSpec):
        return pb.Mechanism(olh=pb.OptimizedLocalHashing(g=spec.g, alpha=spec.alpha))
    if isinstance(spec, LaplaceSpec | DuchiSpec | PiecewiseSpec | HybridSpec):
        described = spec.describe()
        message: Any = {
            "laplace": pb.NumericLaplace,
            "duchi": pb.Duchi,
            "piecewise": pb.Piecewise,
            "hybrid": pb.Hybrid,
        }[spec.kind]
        names = message.DESCRIPTOR.fields_by_name
        fields = {name: described[name] for name in _NUMERIC_FIELDS if name in names}
        return pb.Mechanism(**{spec.kind: message(**fields)})
    raise TypeError(f"no wire form for {type(spec).__name__}")
