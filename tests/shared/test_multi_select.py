"""Multi-select questions: the spec, its errors, answers, prompts and the stated ε split."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.shared.mechanisms import ItemRandomizedResponse
from deniable.shared.questions import MULTI_SELECT, check_question, question_from_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

FRUIT = {
    "id": "fruit",
    "text": "Which did you buy?",
    "type": "multi_select",
    "items": ["apples", "pears", "plums"],
    "epsilon": 1.5,
}


def spec(**changes: Any) -> dict[str, Any]:
    return {**FRUIT, **changes}


def test_a_spec_builds_the_question_with_item_rr_at_the_total_epsilon() -> None:
    question, mechanism = question_from_spec(FRUIT, "questions[0]")
    assert list(question.multi_select.items) == ["apples", "pears", "plums"]
    assert mechanism == ItemRandomizedResponse.from_epsilon(3, 1.5)
    assert question.mechanism.WhichOneof("kind") == "item_rr"
    assert check_question(question, "questions[0]") == mechanism


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (spec(items=["apples"]), "questions[0]: 'items' must list 2..64 items, got 1"),
        (spec(items=[str(i) for i in range(65)]), "'items' must list 2..64 items, got 65"),
        (spec(items="apples"), "questions[0]: 'items' must be a list of strings"),
        (
            spec(items=["apples", "Apples"]),
            "questions[0].multi_select.items[1]: duplicate item 'Apples'",
        ),
        (
            spec(items=["apples, pears", "plums"]),
            "questions[0].multi_select.items[0]: 'apples, pears' contains a comma",
        ),
        (spec(items=["apples", "NONE"]), "questions[0].multi_select.items[1]: 'NONE' is reserved"),
        (spec(items=["apples", " "]), "questions[0].multi_select.items[1]: must be 1..200"),
        ({k: v for k, v in FRUIT.items() if k != "epsilon"}, "questions[0]: 'epsilon' is required"),
        (spec(alpha=0.5), "unknown keys for a multi_select question ['alpha']"),
        (
            spec(mechanism="oue"),
            "unknown kind 'oue' of a multi_select question; expected one of: auto, item_rr",
        ),
        (spec(epsilon=25), "'epsilon' is 25, above the largest allowed, 20.0"),
        (spec(epsilon=0), "epsilon must be a finite number > 0, got 0.0"),
    ],
)
def test_bad_specs_are_refused_naming_the_key(item: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=r".") as error:
        question_from_spec(item, "questions[0]")
    assert message in str(error.value)


def test_a_question_on_the_wire_with_too_many_items_is_refused() -> None:
    question, _ = question_from_spec(FRUIT, "questions[0]")
    del question.multi_select.items[:]
    question.multi_select.items.extend(str(i) for i in range(65))
    with pytest.raises(ValueError, match=r"q.multi_select.items: need 2..64 items, got 65"):
        check_question(question, "q")


@pytest.fixture
def fruit() -> pb.Question:
    question, _ = question_from_spec(FRUIT, "questions[0]")
    return question


@pytest.mark.parametrize(
    ("text", "mask"),
    [
        ("apples,pears", 0b011),
        (" Plums , APPLES ", 0b101),
        ("3,1", 0b101),
        ("pears,pears", 0b010),
        ("", 0),
        ("none", 0),
        ("None", 0),
        ("apples,pears,plums", 0b111),
    ],
)
def test_answers_name_items_or_their_numbers(fruit: pb.Question, text: str, mask: int) -> None:
    assert MULTI_SELECT.parse_answer(text, fruit) == mask


@pytest.mark.parametrize(
    ("text", "bad"), [("apples,kiwis", "'kiwis'"), ("4", "'4'"), ("apples,", "''"), ("0", "'0'")]
)
def test_a_bad_answer_names_the_unknown_item(fruit: pb.Question, text: str, bad: str) -> None:
    with pytest.raises(ValueError, match="answer must be") as error:
        MULTI_SELECT.parse_answer(text, fruit)
    assert str(error.value) == (
        "answer must be item names or numbers 1..3 separated by commas, or 'none', "
        f"got {text!r} ({bad} is not an item)"
    )


def test_the_prompt_lists_the_items_and_the_description_states_the_split(
    fruit: pb.Question,
) -> None:
    assert MULTI_SELECT.prompt_lines(fruit) == [
        "   1. apples",
        "   2. pears",
        "   3. plums",
        "      Choose any: names or numbers separated by commas, or 'none'.",
    ]
    fruit.privacy.epsilon = 1.5
    assert MULTI_SELECT.describe(fruit) == (
        "any of [apples, pears, plums], item_rr, epsilon = 1.5000 (exact) in total, 0.5000 per item"
    )


def test_the_explanation_states_the_total_and_the_per_item_epsilon() -> None:
    text = ItemRandomizedResponse.from_epsilon(3, 1.5).explain()
    assert "3 items" in text
    assert "epsilon = 1.50 in total, 0.50 per item" in text
    assert "flipped with probability 38%" in text
