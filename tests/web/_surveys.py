"""Surveys the page tests answer: one question of every kind, and a few single ones."""

from __future__ import annotations

from deniable.shared.wire.v1 import aggregator_pb2 as pb


def yes_no(qid: str = "cheated", alpha: float = 0.5, text: str = "") -> pb.Question:
    """A yes/no question with randomized response at ``alpha``."""
    return pb.Question(
        id=qid,
        text=text or f"Question {qid}?",
        binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha)),
    )


def colour(alpha: float = 0.5) -> pb.Question:
    """A multiple-choice question of three options (GRR)."""
    return pb.Question(
        id="colour",
        text="Favourite colour?",
        categorical=pb.CategoricalQuestion(options=["red", "green", "blue"]),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=alpha)),
    )


def hours() -> pb.Question:
    """A numeric question on [0, 24] (local Laplace at ε = 1)."""
    return pb.Question(
        id="hours",
        text="Hours of sleep last night?",
        numeric=pb.NumericQuestion(min=0.0, max=24.0),
        mechanism=pb.Mechanism(laplace=pb.NumericLaplace(epsilon=1.0, grid_bits=10)),
    )


def fruit() -> pb.Question:
    """A multi-select question of three items (per-item randomized response)."""
    return pb.Question(
        id="fruit",
        text="Which fruit do you eat?",
        multi_select=pb.MultiSelectQuestion(items=["apples", "pears", "plums"]),
        mechanism=pb.Mechanism(item_rr=pb.ItemRandomizedResponse(q=0.35)),
    )


def habits() -> pb.Question:
    """A joint question of a yes/no, an options and a binned numeric part (GRR on 18 cells)."""
    parts = [
        pb.JointPart(id="smoke", text="Do you smoke?", binary=pb.BinaryQuestion()),
        pb.JointPart(
            id="team",
            text="Which team?",
            categorical=pb.CategoricalQuestion(options=["A", "B", "C"]),
        ),
        pb.JointPart(
            id="age", text="Your age", numeric=pb.BinnedNumericQuestion(edges=[0, 18, 65, 120])
        ),
    ]
    return pb.Question(
        id="habits",
        text="Your habits",
        joint=pb.JointQuestion(parts=parts),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.25)),
    )


def every_kind() -> list[pb.Question]:
    """Yes/no, multiple choice, numeric, multi-select and joint: each ε below 2."""
    return [yes_no(), colour(), hours(), fruit(), habits()]


KEYBOARD_ANSWERS: dict[str, str | set[str]] = {
    "answer--cheated": "yes",
    "answer--colour": "3",
    "answer--hours": "7.5",
    "answer--fruit": {"1", "3"},
    "answer--habits--smoke": "no",
    "answer--habits--team": "2",
    "answer--habits--age": "42",
}
"""Answers to :func:`every_kind` by input name, for ``answer_by_keyboard``."""


def survey(survey_id: str, *questions: pb.Question, title: str = "Habits and honesty") -> pb.Survey:
    """An open survey of ``questions``."""
    return pb.Survey(id=survey_id, title=title, questions=questions, state=pb.SURVEY_STATE_OPEN)
