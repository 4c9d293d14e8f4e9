"""Numeric questions: a number on a public range; the mechanism with the least worst variance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from deniable.shared.mechanisms import Mechanism, NumericMechanism
from deniable.shared.questions._base import Answer, QuestionType, register_question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_NUMERIC_BOUND", "NUMERIC", "Numeric", "choose_numeric"]

MAX_NUMERIC_BOUND = 1e15
"""Largest magnitude of a numeric question's ``min`` and ``max`` in a survey.

Every numeric report y (on the normalized [−1, 1] scale) has |y| < 2^117: Laplace clamps
at 2^52, Duchi's B is at most about 2000 at ε >= 0.001, a Piecewise grid has fewer than
2^52 cells of width at most 2^65. Tallies are exact integers, so over any number of
reports |ȳ| < 2^117 and s² < 2^235; a t-quantile is below 2^53 for every confidence level
< 1 (2^30 up to 1 − 1e-9). With |min|, |max| <= 1e15 < 2^50 the mean and interval ends
x = min + (max − min)(t + 1)/2 stay below 2^225 and the worst-case variance below 2^335,
all far inside the float range (2^1024). The bound is human-scale (a quadrillion; whole
numbers are exact below 2^53), far beyond any survey answer.
"""

AUTO_PREFERENCE = ("duchi", "hybrid", "piecewise", "laplace")
"""The order ``auto`` prefers on ties of worst-case variance (Hybrid with β = 0, at
ε <= 0.61, is Duchi's mechanism: then Duchi, by name)."""


def choose_numeric(lo: float, hi: float, epsilon: float) -> NumericMechanism:
    """The ``auto`` rule on [lo, hi]: the least worst-case variance of the mean.

    Of the registered numeric mechanisms at ``epsilon``, the one whose mean from n
    participants has the smallest variance for the worst distribution on the range
    (``estimate_variance``; :func:`~deniable.shared.questions.least_variance`), ties going
    to :data:`AUTO_PREFERENCE`'s order. That is Duchi's mechanism at every ε: its reports
    ±B have E[y² | t] = B² whatever t, while Piecewise and Hybrid (the least variance
    *given* a value near the middle, Wang et al., ICDE 2019) add t² to theirs, and the
    worst population puts its values at the ends of the range.

    Example:
        >>> choose_numeric(0.0, 100.0, 1.0).name
        'duchi'
    """
    return cast(NumericMechanism, NUMERIC.auto(lo, hi, epsilon=epsilon))


class Numeric(QuestionType):
    """A number on a public range (``Question.numeric``); answers are floats in [min, max].

    Example:
        >>> question = pb.Question(numeric=pb.NumericQuestion(min=0, max=40))
        >>> NUMERIC.parse_answer("12.5", question)
        12.5
    """

    name: ClassVar[str] = "numeric"
    label: ClassVar[str] = "numeric"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"min", "max", "epsilon", "mechanism"})
    estimates_a_mean: ClassVar[bool] = True
    auto_preference: ClassVar[tuple[str, ...]] = AUTO_PREFERENCE

    def domain(self, item: Mapping[str, Any]) -> pb.NumericQuestion:
        """The range ``min``..``max`` (checked by the mechanism: finite, min < max)."""
        lo, hi = item.get("min"), item.get("max")
        for key, value in (("min", lo), ("max", hi)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"'{key}' must be a number, got {value!r}")
        return pb.NumericQuestion(min=float(lo), max=float(hi))  # type: ignore[arg-type]

    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """(lo, hi): the range."""
        return (question.numeric.min, question.numeric.max)

    def domain_fields(self, mechanism: Mechanism) -> dict[str, Any]:
        """``lo`` and ``hi``, the range."""
        return {"lo": mechanism.lo, "hi": mechanism.hi}  # type: ignore[attr-defined]

    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """A question on the mechanism's range [lo, hi]."""
        lo, hi = mechanism.lo, mechanism.hi  # type: ignore[attr-defined]
        return pb.Question(
            numeric=pb.NumericQuestion(min=lo, max=hi), mechanism=mechanism.to_message()
        )

    def check(self, question: pb.Question, where: str) -> None:
        """Min and max within ±:data:`MAX_NUMERIC_BOUND`."""
        for field, value in (("min", question.numeric.min), ("max", question.numeric.max)):
            if abs(value) > MAX_NUMERIC_BOUND:
                raise ValueError(
                    f"{where}.numeric.{field}: {value!r} is beyond ±{MAX_NUMERIC_BOUND:g}, "
                    "the largest magnitude of a numeric question's range"
                )

    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """A finite number in [min, max]; values outside are an error, never clamped."""
        try:
            number = float(text.strip())
        except ValueError:
            number = math.nan
        if not question.numeric.min <= number <= question.numeric.max:
            raise ValueError(f"answer must be {self.answer_hint(question)}, got {text!r}")
        return number

    def answer_hint(self, question: pb.Question) -> str:
        """``a number from MIN to MAX``."""
        return f"a number from {question.numeric.min!r} to {question.numeric.max!r}"

    def prompt_lines(self, question: pb.Question) -> list[str]:
        """How to answer: the range."""
        return [f"Answer with a number from {question.numeric.min!r} to {question.numeric.max!r}."]

    def describe(self, question: pb.Question) -> str:
        """``a number in [lo, hi], hybrid, epsilon = E (exact)``."""
        bounds = f"[{question.numeric.min:g}, {question.numeric.max:g}]"
        name = question.mechanism.registered.name or question.mechanism.WhichOneof("kind")
        return f"a number in {bounds}, {name}, epsilon = {question.privacy.epsilon:.4f} (exact)"


NUMERIC = register_question_type(Numeric())
