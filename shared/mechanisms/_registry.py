"""The one registry of mechanisms: by name, by question type, and from a wire message."""

from __future__ import annotations

import re
from typing import TypeVar

from deniable.shared.mechanisms._base import Mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "answers",
    "mechanism_class",
    "mechanism_name",
    "mechanisms_for",
    "register",
    "registered",
    "unregister",
]

M = TypeVar("M", bound=type[Mechanism])

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_VALUE_FIELDS = frozenset(f.name for f in pb.Report.DESCRIPTOR.oneofs_by_name["value"].fields)
_QUESTION_TYPES = frozenset(f.name for f in pb.Question.DESCRIPTOR.oneofs_by_name["kind"].fields)
_BUILT_IN = frozenset(
    f.name for f in pb.Mechanism.DESCRIPTOR.oneofs_by_name["kind"].fields if f.name != "registered"
)
_MECHANISMS: dict[str, type[Mechanism]] = {}


def register(cls: M) -> M:
    """Register a mechanism class under its ``name`` (usable as a class decorator).

    The name must match ``[a-z][a-z0-9_]{0,63}``; a built-in wire message of that name, if
    any, is the mechanism's wire form, and any other name travels as a
    ``RegisteredMechanism``. Registering the same class again is a no-op.

    Raises:
        ValueError: a malformed name, a name already taken by another class, an unknown
            question type or report value field.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == "registered":
        raise ValueError(f"mechanism name must match [a-z][a-z0-9_]{{0,63}}, got {name!r}")
    for kind in (cls.question_type, *cls.also_answers):
        if kind not in _QUESTION_TYPES:
            raise ValueError(
                f"mechanism {name!r}: question_type must be one of {sorted(_QUESTION_TYPES)}, "
                f"got {kind!r}"
            )
    for field in (cls.value_field, *cls.value_fields):
        if field not in _VALUE_FIELDS:
            raise ValueError(
                f"mechanism {name!r}: value_field must be one of {sorted(_VALUE_FIELDS)}, "
                f"got {field!r}"
            )
    existing = _MECHANISMS.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(f"mechanism name {name!r} is already registered by {existing.__name__}")
    _MECHANISMS[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a mechanism registered by name (for extensions and tests); built-ins stay."""
    if name in _BUILT_IN:
        raise ValueError(f"mechanism {name!r} is built in and cannot be unregistered")
    _MECHANISMS.pop(name, None)


def registered() -> dict[str, type[Mechanism]]:
    """Every registered mechanism by name, in registration order."""
    return dict(_MECHANISMS)


def mechanisms_for(question_type: str) -> list[type[Mechanism]]:
    """The mechanisms that answer a question type, in registration order."""
    return [cls for cls in _MECHANISMS.values() if answers(cls, question_type)]


def answers(cls: type[Mechanism], question_type: str) -> bool:
    """Whether ``cls`` answers questions of ``question_type`` (its own or one it also answers)."""
    return question_type == cls.question_type or question_type in cls.also_answers


def mechanism_name(message: pb.Mechanism) -> str | None:
    """The registry name a wire ``Mechanism`` names (None when it names none)."""
    kind = message.WhichOneof("kind")
    if kind == "registered":
        return message.registered.name
    return kind


def mechanism_class(name: str) -> type[Mechanism]:
    """The class registered under ``name``.

    Raises:
        KeyError: no mechanism of that name is registered.
    """
    return _MECHANISMS[name]
