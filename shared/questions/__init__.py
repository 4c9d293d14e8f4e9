"""Kinds of question (yes/no, multiple choice, numeric, joint): one module each, one registry."""

from __future__ import annotations

from typing import cast

from deniable.shared.mechanisms import FrequencyOracle, NumericMechanism
from deniable.shared.questions._base import (
    MAX_SURVEY_EPSILON,
    MIN_SURVEY_EPSILON,
    Answer,
    QuestionType,
    least_variance,
    question_type,
    question_types,
    register_question_type,
)
from deniable.shared.questions._survey import (
    QUESTION_ID,
    SURVEY_ID,
    check_question,
    question_from_spec,
)
from deniable.shared.questions.binary import BINARY
from deniable.shared.questions.categorical import CATEGORICAL, MAX_OPTION_TEXT, choose_categorical
from deniable.shared.questions.joint import JOINT
from deniable.shared.questions.multi_select import MULTI_SELECT, NONE_ANSWER, chosen_items
from deniable.shared.questions.numeric import MAX_NUMERIC_BOUND, NUMERIC, choose_numeric

__all__ = [
    "BINARY",
    "CATEGORICAL",
    "JOINT",
    "MAX_NUMERIC_BOUND",
    "MAX_OPTION_TEXT",
    "MAX_SURVEY_EPSILON",
    "MIN_SURVEY_EPSILON",
    "MULTI_SELECT",
    "NONE_ANSWER",
    "NUMERIC",
    "QUESTION_ID",
    "SURVEY_ID",
    "Answer",
    "QuestionType",
    "categorical_mechanism",
    "check_question",
    "choose_categorical",
    "choose_numeric",
    "chosen_items",
    "least_variance",
    "numeric_mechanism",
    "question_from_spec",
    "question_type",
    "question_types",
    "register_question_type",
]


def categorical_mechanism(
    kind: str, k: int, epsilon: float | None = None, alpha: float | None = None
) -> FrequencyOracle:
    """The multiple-choice mechanism of that ``kind`` (its name, or ``auto``) over k options.

    Every mechanism registered for multiple-choice questions is a frequency oracle (it
    subclasses :class:`~deniable.shared.mechanisms.FrequencyOracle`): that is the contract
    of the type, which its planning and simulation rely on.

    Example:
        >>> categorical_mechanism("grr", 4, alpha=0.5)
        GeneralizedRandomizedResponse(k=4, alpha=0.5)
    """
    return cast(FrequencyOracle, CATEGORICAL.build(kind, k, epsilon=epsilon, alpha=alpha))


def numeric_mechanism(kind: str, lo: float, hi: float, epsilon: float) -> NumericMechanism:
    """The numeric mechanism of that ``kind`` (its name, or ``auto``) on [lo, hi] at ``epsilon``.

    Every mechanism registered for numeric questions subclasses
    :class:`~deniable.shared.mechanisms.NumericMechanism` (the type's contract).

    Example:
        >>> numeric_mechanism("auto", 0.0, 100.0, 1.0).name
        'duchi'
    """
    return cast(NumericMechanism, NUMERIC.build(kind, lo, hi, epsilon=epsilon))
