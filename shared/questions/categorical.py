"""Multiple-choice questions: one of 2..1024 named options; the least worst-case variance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from deniable.shared.errors import shown
from deniable.shared.mechanisms import (
    MAX_OPTIONS,
    FrequencyOracle,
    Mechanism,
)
from deniable.shared.mechanisms._parameters import check_epsilon, check_options
from deniable.shared.questions._base import Answer, QuestionType, register_question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["CATEGORICAL", "MAX_OPTION_TEXT", "Categorical", "choose_categorical"]

MAX_OPTION_TEXT = 200
"""Longest option label, in characters."""


AUTO_PREFERENCE = ("grr", "olh", "oue")
"""The order ``auto`` prefers on ties of worst-case variance: the smaller report first
(one option; a hash seed and a value; k bits)."""


def choose_categorical(k: int, epsilon: float) -> FrequencyOracle:
    """The ``auto`` rule for k options: the least worst-case variance of a share.

    Of the registered frequency oracles at ``epsilon``, the one whose share estimate from
    n participants has the smallest variance at the worst true share (``estimate_variance``;
    :func:`~deniable.shared.questions.least_variance`), ties going to
    :data:`AUTO_PREFERENCE`'s order. With Wang et al.'s variances (USENIX Security 2017)
    that is GRR for few options or a large ε, otherwise OUE or OLH: they tie where OLH's
    hash range g = round(e^ε) + 1 equals the optimal e^ε + 1, and OUE is ahead elsewhere.

    Example:
        >>> choose_categorical(5, 1.0).name, choose_categorical(20, 1.0).name
        ('grr', 'oue')
    """
    count, eps = check_options(k), check_epsilon(epsilon)
    return cast(FrequencyOracle, CATEGORICAL.auto(count, epsilon=eps))


class Categorical(QuestionType):
    """A multiple-choice question (``Question.categorical``); answers are option indices.

    Example:
        >>> question = pb.Question(categorical=pb.CategoricalQuestion(options=["a", "b"]))
        >>> CATEGORICAL.parse_answer("B", question), CATEGORICAL.parse_answer("1", question)
        (1, 0)
    """

    name: ClassVar[str] = "categorical"
    label: ClassVar[str] = "multiple-choice"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"options", "alpha", "epsilon", "mechanism"})
    alpha_mechanism: ClassVar[str | None] = "grr"
    auto_preference: ClassVar[tuple[str, ...]] = AUTO_PREFERENCE

    def domain(self, item: Mapping[str, Any]) -> pb.CategoricalQuestion:
        """The ``options``: a list of strings."""
        options = item.get("options")
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise ValueError("'options' must be a list of strings")
        return pb.CategoricalQuestion(options=options)

    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """(k,): the number of options."""
        return (len(question.categorical.options),)

    def domain_fields(self, mechanism: Mechanism) -> dict[str, Any]:
        """``k``, the number of options."""
        return {"k": int(mechanism.k)}  # type: ignore[attr-defined]

    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """A question with the mechanism's k options, named ``names`` or ``0``..``k−1``."""
        k = int(mechanism.k)  # type: ignore[attr-defined]
        options = list(names) or [str(v) for v in range(k)]
        return pb.Question(
            categorical=pb.CategoricalQuestion(options=options),
            mechanism=mechanism.to_message(),
        )

    def check(self, question: pb.Question, where: str) -> None:
        """2..1024 distinct options of 1..200 characters, not blank."""
        options = list(question.categorical.options)
        field = f"{where}.categorical.options"
        if not 2 <= len(options) <= MAX_OPTIONS:
            raise ValueError(f"{field}: need 2..{MAX_OPTIONS} options, got {len(options)}")
        seen: set[str] = set()
        for index, option in enumerate(options):
            if not option.strip() or len(option) > MAX_OPTION_TEXT:
                raise ValueError(f"{field}[{index}]: must be 1..{MAX_OPTION_TEXT} characters")
            if option in seen:
                raise ValueError(f"{field}[{index}]: duplicate option {shown(option)}")
            seen.add(option)

    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """An option's name (any case) or its number from 1, giving the option's index."""
        value = text.strip()
        options = list(question.categorical.options)
        lowered = [option.lower() for option in options]
        if value.lower() in lowered:
            return lowered.index(value.lower())
        if value.isdigit() and 1 <= int(value) <= len(options):
            return int(value) - 1
        raise ValueError(f"answer must be {self.answer_hint(question)}, got {text!r}")

    def answer_hint(self, question: pb.Question) -> str:
        """``an option name or its number 1..k``."""
        return f"an option name or its number 1..{len(question.categorical.options)}"

    def prompt_lines(self, question: pb.Question) -> list[str]:
        """The options, numbered from 1."""
        return [f"{n:>4}. {option}" for n, option in enumerate(question.categorical.options, 1)]

    def describe(self, question: pb.Question) -> str:
        """``one of [a, b, c], grr, epsilon = E (exact)``."""
        options = ", ".join(question.categorical.options)
        name = question.mechanism.registered.name or question.mechanism.WhichOneof("kind")
        return f"one of [{options}], {name}, epsilon = {question.privacy.epsilon:.4f} (exact)"


CATEGORICAL = register_question_type(Categorical())
