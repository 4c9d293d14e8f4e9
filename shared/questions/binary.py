"""Yes/no questions: the answer is a bit; randomized response by default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from deniable.shared.mechanisms import Mechanism, mechanism_of
from deniable.shared.questions._base import Answer, QuestionType, register_question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["BINARY", "NO", "YES", "Binary"]

YES = ("yes", "y")
NO = ("no", "n")


class Binary(QuestionType):
    """A yes/no question (``Question.binary``); answers are True (yes) or False (no).

    Example:
        >>> BINARY.parse_answer("Yes", pb.Question(binary=pb.BinaryQuestion()))
        True
    """

    name: ClassVar[str] = "binary"
    label: ClassVar[str] = "yes/no"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"alpha", "epsilon", "mechanism"})
    alpha_mechanism: ClassVar[str | None] = "randomized_response"
    auto_preference: ClassVar[tuple[str, ...]] = ("randomized_response",)

    def domain(self, item: Mapping[str, Any]) -> pb.BinaryQuestion:
        """Nothing to choose: a yes/no question has no parameters."""
        return pb.BinaryQuestion()

    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """No domain arguments."""
        return ()

    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """A yes/no question with ``mechanism``."""
        return pb.Question(binary=pb.BinaryQuestion(), mechanism=mechanism.to_message())

    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """``yes``/``y`` → True, ``no``/``n`` → False, any case."""
        value = text.strip().lower()
        if value in YES:
            return True
        if value in NO:
            return False
        raise ValueError(f"answer must be yes or no, got {text!r}")

    def answer_hint(self, question: pb.Question) -> str:
        """``yes or no``."""
        return "yes or no"

    def choices(self, question: pb.Question) -> list[str] | None:
        """yes, no, y, n."""
        return [YES[0], NO[0], YES[1], NO[1]]

    def placeholder(self, question: pb.Question) -> str:
        """``yes|no``."""
        return "yes|no"

    def describe(self, question: pb.Question) -> str:
        """``yes/no, alpha = A, epsilon = E (exact; 2*alpha = ... approximation)``."""
        epsilon = question.privacy.epsilon
        try:
            alpha = mechanism_of(question).parameters().get("alpha")
        except ValueError:
            alpha = None
        if alpha is not None and question.privacy.epsilon_approx:
            return (
                f"yes/no, alpha = {alpha:g}, epsilon = {epsilon:.4f} (exact; "
                f"2*alpha = {question.privacy.epsilon_approx:.4f} approximation)"
            )
        name = question.mechanism.registered.name or question.mechanism.WhichOneof("kind")
        return f"yes/no, {name}, epsilon = {epsilon:.4f} (exact)"


BINARY = register_question_type(Binary())
