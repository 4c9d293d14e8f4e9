"""From a question on the wire to its validated mechanism, through the registry."""

from __future__ import annotations

from deniable.shared.mechanisms._base import Mechanism
from deniable.shared.mechanisms._registry import (
    answers,
    mechanism_class,
    mechanism_name,
    mechanisms_for,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["InvalidMechanismError", "describe_mechanism", "mechanism_of"]


class InvalidMechanismError(ValueError):
    """A question's kind or mechanism is missing, unknown, mismatched or invalid.

    The message starts with the field's path inside the question, e.g.
    ``mechanism.grr.alpha: alpha must be in (0, 1], got 1.5``.
    """


def describe_mechanism(mechanism: pb.Mechanism) -> str:
    """A mechanism's name and parameters in one line, e.g. ``grr (alpha 0.5)``."""
    kind = mechanism.WhichOneof("kind")
    if kind is None:
        return "no mechanism"
    if kind == "registered":
        registered = mechanism.registered
        values = ", ".join(f"{k} {v!r}" for k, v in sorted(registered.parameters.items()))
        return f"{registered.name} ({values})"
    fields = getattr(mechanism, kind).ListFields()
    return f"{kind} (" + ", ".join(f"{field.name} {value!r}" for field, value in fields) + ")"


def _expected(kind: str) -> str:
    return " or ".join(cls.name for cls in mechanisms_for(kind)) or "no mechanism"


def mechanism_of(question: pb.Question) -> Mechanism:
    """The validated mechanism of a question, from its parameters alone (never its ε).

    Raises:
        InvalidMechanismError: the kind, the mechanism or a parameter is missing, unknown,
            does not fit the question or is invalid; the message starts with the field's
            path inside the question.
    """
    kind = question.WhichOneof("kind")
    if kind is None:
        raise InvalidMechanismError("kind: missing (binary, categorical or numeric)")
    name = mechanism_name(question.mechanism)
    if name is None:
        raise InvalidMechanismError(
            f"mechanism: missing (a {kind} question takes {_expected(kind)})"
        )
    oneof = str(question.mechanism.WhichOneof("kind"))
    if oneof == "registered" and name in pb.Mechanism.DESCRIPTOR.fields_by_name:
        raise InvalidMechanismError(
            f"mechanism.registered.name: {name!r} is built in; send it as mechanism.{name}"
        )
    try:
        cls = mechanism_class(name)
    except KeyError:
        raise InvalidMechanismError(
            f"mechanism.registered.name: unknown mechanism {name[:40]!r} (a {kind} question "
            f"takes {_expected(kind)})"
        ) from None
    if not answers(cls, kind):
        raise InvalidMechanismError(
            f"mechanism: {name} does not apply to a {kind} question (expected {_expected(kind)})"
        )
    try:
        return cls.from_question(question)
    except (ValueError, TypeError) as error:
        where = f"mechanism.{oneof}"
        named = str(error).split(" ", 1)[0]  # parameter errors start with the parameter's name
        if oneof == "registered":
            if named in question.mechanism.registered.parameters:
                where = f"{where}.parameters[{named!r}]"
        elif named in getattr(question.mechanism, oneof).DESCRIPTOR.fields_by_name:
            where = f"{where}.{named}"
        raise InvalidMechanismError(f"{where}: {error}") from None
