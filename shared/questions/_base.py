"""The interface of a kind of question (yes/no, multiple choice, numeric), and its registry."""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from deniable.shared.mechanisms import Mechanism, Tally, mechanism_class, mechanisms_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "MAX_SURVEY_EPSILON",
    "MIN_SURVEY_EPSILON",
    "Answer",
    "QuestionType",
    "least_variance",
    "question_type",
    "question_types",
    "register_question_type",
]

Answer = bool | int | float
"""A true answer: yes/no, an option's index, or a number. It never leaves the device."""

MIN_SURVEY_EPSILON = 1e-3
"""Smallest exact ε a survey question's mechanism may have, for every kind of mechanism.

Far below any useful setting (an estimate's variance grows as 1/ε²: a yes/no share from n
reports at ε = 0.001 has a standard error of about 1000/√n) and far above where debiasing
in floating point breaks down: at ε >= 0.001 the gap p* − q* that every categorical and
yes/no estimate divides by is at least about ε/g >= 2e-13 (OLH's hash range g < 2^32), and
a Duchi report ±B is at most about 2/ε = 2000. The numeric mechanisms themselves go down to
ε = 2^-20; this floor is the surveys'.
"""

MAX_SURVEY_EPSILON = 20.0
"""Largest exact ε a survey question's mechanism may have, for every kind of mechanism.

At ε = 20 a yes/no report equals the true answer with probability e^20/(1 + e^20), about
1 − 2.1·10⁻⁹: there is no meaningful deniability left above it. It is also where the
floating-point parameters stop holding the ε asked: randomized response stores α, and the
largest α below 1 gives ε ≈ 37.43, so a spec asking for 100 would otherwise be stored as
37.43. Up to this cap every mechanism stores the ε of a spec to within 10⁻⁶ of its value
(a test checks every registered mechanism on a grid).
"""


def least_variance(mechanisms: Sequence[Mechanism]) -> Mechanism:
    """The ``auto`` rule: the mechanism whose estimate has the least worst-case variance.

    That is ``estimate_variance(1, None)``: the variance of the estimate from one
    participant drawn from the worst population (for shares, the worst true share; for
    means, the worst distribution on the range), which sets the participants any margin
    needs (n = z²·Var₁/margin², as the planner computes). Ties go to the earliest of
    ``mechanisms``.
    """
    if not mechanisms:
        raise ValueError("no mechanism to choose from")
    return min(mechanisms, key=lambda mechanism: mechanism.estimate_variance(1, None))


class QuestionType(ABC):
    """What differs between kinds of question, outside the mechanisms that answer them.

    One instance per kind, registered under ``name``, the ``Question.kind`` field it fills:
    the survey spec's keys and how they build the question and its mechanism (including
    ``auto``), the domain's limits, how a participant's answer is written and parsed, and
    how the question is shown.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    spec_keys: ClassVar[frozenset[str]]
    """Keys a survey spec's question of this type may have, besides id, text and type."""
    alpha_mechanism: ClassVar[str | None] = None
    """The mechanism a keep-probability α names when no mechanism is given (None: no α)."""
    estimates_a_mean: ClassVar[bool] = False
    """Whether the estimate is a mean (margins in the answer's units), not shares."""
    auto_preference: ClassVar[tuple[str, ...]] = ()
    """Mechanisms in the order ``auto`` prefers them when their worst-case variances tie;
    registered mechanisms not named here come after, in registration order."""

    def mechanisms(self) -> list[type[Mechanism]]:
        """The registered mechanisms that answer this kind of question."""
        return mechanisms_for(self.name)

    @abstractmethod
    def domain(self, item: Mapping[str, Any]) -> Any:
        """The question's domain message (e.g. ``NumericQuestion``) from a survey spec item.

        Raises:
            ValueError: a missing or invalid key (named).
        """

    @abstractmethod
    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """The domain as mechanism constructors take it first: (), (k,) or (lo, hi)."""

    def candidates(self, *domain: Any, epsilon: float) -> list[Mechanism]:
        """The mechanisms ``auto`` compares, on ``domain`` at ``epsilon``.

        Every registered mechanism of this type that plans can build (:meth:`plannable`),
        in the order of :attr:`auto_preference`.
        """
        rank = {name: index for index, name in enumerate(self.auto_preference)}
        classes = sorted(
            (cls for cls in self.mechanisms() if self.plannable(cls)),
            key=lambda cls: rank.get(cls.name, len(rank)),
        )
        return [self.build(cls.name, *domain, epsilon=epsilon) for cls in classes]

    def auto(self, *domain: Any, epsilon: float) -> Mechanism:
        """The mechanism ``auto`` picks for this domain at ``epsilon``.

        Of the :meth:`candidates`, the least worst-case variance (:func:`least_variance`);
        the planner's ``auto_choice`` is the same.
        """
        return least_variance(self.candidates(*domain, epsilon=epsilon))

    @abstractmethod
    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """A question (no id or text) whose domain and mechanism are ``mechanism``'s.

        ``names`` labels a multiple-choice question's options (default ``0``..``k−1``).
        """

    def build(
        self,
        name: str,
        *domain: Any,
        epsilon: float | None = None,
        alpha: float | None = None,
    ) -> Mechanism:
        """The ``name`` mechanism (or ``auto``) on ``domain``, at ``epsilon`` or with ``alpha``.

        ``domain`` is what :meth:`domain_args` gives: (), (k,) or (lo, hi).

        Raises:
            ValueError: unknown or misplaced name, or a missing or conflicting ε/α (named).
        """
        names = [cls.name for cls in self.mechanisms()]
        if alpha is not None and name == "auto" and self.alpha_mechanism is not None:
            name = self.alpha_mechanism
        if name != "auto" and name not in names:
            raise ValueError(
                f"unknown kind {name!r} of a {self.name} question; expected one of: "
                + ", ".join(["auto", *names])
            )
        if alpha is not None and epsilon is not None:
            raise ValueError(
                f"give epsilon or alpha, not both (epsilon={epsilon!r}, alpha={alpha!r})"
            )
        args = domain
        if alpha is not None:
            cls: Any = mechanism_class(name) if name != "auto" else None
            if cls is None or "alpha" not in {f.name for f in dataclasses.fields(cls) if f.init}:
                only = f"kind {self.alpha_mechanism!r}" if self.alpha_mechanism else "no kind"
                raise ValueError(
                    f"alpha={alpha!r} applies only to {only}, not {name!r}; give epsilon"
                )
            mechanism: Mechanism = cls(*args, alpha=alpha)
            return mechanism
        if epsilon is None:
            hint = "epsilon or alpha" if self.alpha_mechanism else "epsilon"
            raise ValueError(f"kind {name!r} needs {hint}")
        if name == "auto":
            return self.auto(*args, epsilon=epsilon)
        built: Mechanism = mechanism_class(name).from_epsilon(*args, epsilon)  # type: ignore[attr-defined]
        return built

    def plannable(self, cls: type[Mechanism]) -> bool:
        """Whether plans can build ``cls`` at a given ε (it has ``from_epsilon``)."""
        return callable(getattr(cls, "from_epsilon", None))

    def domain_fields(self, mechanism: Mechanism) -> dict[str, Any]:
        """The domain as plans and simulations report it (``k``, or ``lo`` and ``hi``)."""
        return {}

    def check(self, question: pb.Question, where: str) -> None:  # noqa: B027 - optional hook
        """Refuse a domain beyond the surveys' limits (raise ValueError naming the field)."""

    @staticmethod
    def check_epsilon(mechanism: Mechanism, where: str, message: pb.Mechanism) -> None:
        """Refuse a mechanism without privacy, or with ε outside the surveys' limits.

        The limits are :data:`MIN_SURVEY_EPSILON` and :data:`MAX_SURVEY_EPSILON`.
        """
        from deniable.shared.mechanisms import describe_mechanism

        if not math.isfinite(mechanism.epsilon):
            raise ValueError(
                f"{where}.mechanism: {describe_mechanism(message)} gives no privacy (epsilon = inf)"
            )
        if mechanism.epsilon < MIN_SURVEY_EPSILON:
            raise ValueError(
                f"{where}.mechanism: epsilon {mechanism.epsilon!r} of "
                f"{describe_mechanism(message)} is below the minimum {MIN_SURVEY_EPSILON!r} "
                "(an estimate's variance grows as 1/epsilon^2)"
            )
        if mechanism.epsilon > MAX_SURVEY_EPSILON:
            raise ValueError(
                f"{where}.mechanism: epsilon {mechanism.epsilon!r} of "
                f"{describe_mechanism(message)} is above the maximum {MAX_SURVEY_EPSILON!r} "
                "(above it a yes/no report is the true answer with probability over "
                "1 - 2.1e-9: no meaningful privacy)"
            )

    @abstractmethod
    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """One true answer from the participant's text.

        Raises:
            ValueError: the text is not a valid answer (the message says what is expected).
        """

    @abstractmethod
    def answer_hint(self, question: pb.Question) -> str:
        """What an answer to this question looks like, for prompts and errors."""

    def prompt_lines(self, question: pb.Question) -> list[str]:
        """Lines shown under the question's text before the participant answers."""
        return []

    def choices(self, question: pb.Question) -> list[str] | None:
        """The only answers a prompt accepts, when there are a few (None: free text)."""
        return None

    def placeholder(self, question: pb.Question) -> str:
        """How ``--answer QID=...`` writes an answer in a hint, e.g. ``VALUE``."""
        return "VALUE"

    def parts(self, question: pb.Question) -> list[pb.Question]:
        """Questions an interactive prompt asks in turn for this one (empty: ask it whole).

        Their answers become one answer through :meth:`combine`.
        """
        return []

    def combine(self, question: pb.Question, answers: Sequence[Answer]) -> Answer:
        """One answer from the answers to :meth:`parts`, in order."""
        raise ValueError(f"a {self.name} question is answered whole, not in parts")

    def complete_estimate(  # noqa: B027 - optional hook
        self,
        question: pb.Question,
        mechanism: Mechanism,
        estimate: pb.Estimate,
        *,
        simultaneous: bool = False,
    ) -> None:
        """Add this type's own fields to an estimate its mechanism made (default: none)."""

    def given_pair(self, question: pb.Question, given: str, item: str) -> tuple[int, int]:
        """The two items a conditional share names (``GetEstimateRequest.given``, ``.item``).

        Raises:
            ValueError: this kind of question has no conditional shares (only multi-select
                questions have), or a name is not one of its items.
        """
        raise ValueError(
            f"given, item: a conditional share applies only to multi-select questions; "
            f"question {question.id!r} is {self.label}"
        )

    def conditional(
        self,
        question: pb.Question,
        mechanism: Mechanism,
        tally: Tally,
        pair: tuple[int, int],
        confidence: float,
    ) -> pb.ConditionalEstimate:
        """The conditional share of :meth:`given_pair`'s items, as an ``Estimate`` field."""
        raise ValueError(f"question {question.id!r} is {self.label}: no conditional shares")

    @abstractmethod
    def describe(self, question: pb.Question) -> str:
        """One line: the kind of question, its mechanism and its exact ε (``survey show``)."""


_TYPES: dict[str, QuestionType] = {}


def register_question_type(kind: QuestionType) -> QuestionType:
    """Register a kind of question under its ``name`` (a ``Question.kind`` field)."""
    if kind.name not in {f.name for f in pb.Question.DESCRIPTOR.oneofs_by_name["kind"].fields}:
        raise ValueError(f"question type {kind.name!r} is not a Question.kind field")
    _TYPES[kind.name] = kind
    return kind


def question_type(name: str) -> QuestionType:
    """The registered question type ``name``.

    Raises:
        ValueError: no such question type (naming the known ones).
    """
    try:
        return _TYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown question type {name!r}; expected one of: {', '.join(_TYPES)}"
        ) from None


def question_types() -> dict[str, QuestionType]:
    """Every registered question type by name."""
    return dict(_TYPES)
