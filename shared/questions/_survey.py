"""A survey's questions: built from a spec, and checked against the surveys' limits."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from deniable.shared.mechanisms import Mechanism, mechanism_of
from deniable.shared.questions._base import (
    MAX_SURVEY_EPSILON,
    QuestionType,
    question_type,
    question_types,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["QUESTION_ID", "SURVEY_ID", "check_question", "question_from_spec"]

COMMON_KEYS = frozenset({"id", "text", "type"})
SURVEY_ID = re.compile(r"[a-z0-9]{1,64}")
"""A survey id, as the aggregator assigns them (``fullmatch``)."""
QUESTION_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
"""A question id, unique within its survey (``fullmatch``)."""


def check_question(question: pb.Question, where: str) -> Mechanism:
    """Validate a question's kind, domain and mechanism against the surveys' limits.

    Returns the question's mechanism: valid, private, with ε at least the surveys' minimum.

    Raises:
        ValueError: naming the field under ``where`` (e.g. ``questions[0].mechanism``).
    """
    kind = question.WhichOneof("kind")
    if kind is None:
        kinds = list(question_types())
        raise ValueError(f"{where}.kind: missing ({', '.join(kinds[:-1])} or {kinds[-1]})")
    qtype = question_type(kind)
    qtype.check(question, where)
    try:
        mechanism = mechanism_of(question)
    except ValueError as error:
        raise ValueError(f"{where}.{error}") from None
    QuestionType.check_epsilon(mechanism, where, question.mechanism)
    return mechanism


def question_from_spec(
    item: object, where: str, *, survey_limits: bool = True
) -> tuple[pb.Question, Mechanism]:
    """A question and its mechanism from one entry of a survey spec (JSON).

    The entry has ``id``, ``text``, ``type`` (default ``binary``) and the type's keys: its
    domain (``options``, or ``min`` and ``max``), ``epsilon`` or, where the type has one,
    ``alpha``, and optionally ``mechanism`` (default ``auto``). The question is checked
    against the surveys' limits, as the daemon will; without ``survey_limits`` (planning and
    simulation) its ε may lie outside them, down to no privacy at all.

    Raises:
        ValueError: naming the entry (``where``) and the key or field.
    """
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: must be an object")
    kind = item.get("type", "binary")
    types = question_types()
    if kind not in types:
        raise ValueError(f"{where}.type: expected one of {', '.join(types)}, got {kind!r}")
    qtype = types[kind]
    extra = set(item) - COMMON_KEYS - qtype.spec_keys
    if extra:
        raise ValueError(f"{where}: unknown keys for a {kind} question {sorted(extra)}")
    question = pb.Question(id=str(item.get("id", "")), text=str(item.get("text", "")))
    try:
        mechanism = _mechanism(qtype, question, item, survey_limits)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None
    question.mechanism.CopyFrom(mechanism.to_message())
    qtype.check(question, where)
    if survey_limits:
        QuestionType.check_epsilon(mechanism, where, question.mechanism)
    return question, mechanism


def _check_asked_epsilon(epsilon: object) -> None:
    """Refuse an ε above the surveys' maximum as asked, before it could be rounded to fit.

    Randomized response, GRR and OLH would store the largest α below 1 for any ε from
    about 37.4 up; the cap refuses such requests instead, naming the largest allowed value.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        return  # the mechanism's own checks name the wrong type
    if math.isfinite(epsilon) and epsilon > MAX_SURVEY_EPSILON:
        # NaN, 0, negatives and infinity are named by the mechanism's own checks too.
        raise ValueError(
            f"'epsilon' is {epsilon!r}, above the largest allowed, {MAX_SURVEY_EPSILON!r}: "
            "above it a yes/no report is the true answer with probability over "
            "1 - 2.1e-9 (no meaningful privacy), and a mechanism's parameters can no "
            "longer hold the epsilon asked"
        )


def _mechanism(
    qtype: QuestionType, question: pb.Question, item: Mapping[str, Any], survey_limits: bool
) -> Mechanism:
    if qtype.alpha_mechanism is not None:
        if ("alpha" in item) == ("epsilon" in item):
            raise ValueError("give exactly one of 'alpha' or 'epsilon'")
    elif "epsilon" not in item:
        raise ValueError("'epsilon' is required")
    getattr(question, qtype.name).CopyFrom(qtype.domain(item))
    name = item.get("mechanism", "auto")
    if not isinstance(name, str):
        raise ValueError(f"'mechanism' must be a name, got {name!r}")
    if survey_limits:
        _check_asked_epsilon(item.get("epsilon"))
    args = qtype.domain_args(question)
    return qtype.build(name, *args, epsilon=item.get("epsilon"), alpha=item.get("alpha"))
