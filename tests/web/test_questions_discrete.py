"""The page reads answers and refuses questions exactly as the Python client does.

Answers: every text of a table is read by the page's question type and by the Python
client's ``parse_answer`` (the CLI's ``deniable answer``): the same truth, or both refuse
with the same message. Refusals: a table of questions with invalid, mismatched or
privacy-free mechanisms and domains beyond the surveys' limits, checked by the page's
``prepareQuestion`` and by the client's ``check_mechanism``: the same message, or both
accept. Hints, choices and parts are the Python types'.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict

from deniable.client._answer import check_mechanism, parse_answer
from deniable.client._errors import RefusedError
from deniable.shared.questions import question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

RR = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5))
GRR = pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5))
OUE = pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25))
OLH = pb.Mechanism(olh=pb.OptimizedLocalHashing(g=4, alpha=0.5))
ITEM_RR = pb.Mechanism(item_rr=pb.ItemRandomizedResponse(q=0.25))


def binary(mechanism: pb.Mechanism = RR, id: str = "q1") -> pb.Question:
    return pb.Question(id=id, binary=pb.BinaryQuestion(), mechanism=mechanism)


def categorical(options: list[str], mechanism: pb.Mechanism = GRR) -> pb.Question:
    return pb.Question(
        id="q2", categorical=pb.CategoricalQuestion(options=options), mechanism=mechanism
    )


def multi_select(items: list[str], mechanism: pb.Mechanism = ITEM_RR) -> pb.Question:
    return pb.Question(
        id="q3", multi_select=pb.MultiSelectQuestion(items=items), mechanism=mechanism
    )


def part(id: str, kind: str = "binary", values: list[Any] | None = None) -> pb.JointPart:
    if kind == "binary":
        return pb.JointPart(id=id, text=f"{id}?", binary=pb.BinaryQuestion())
    if kind == "categorical":
        return pb.JointPart(id=id, categorical=pb.CategoricalQuestion(options=values))
    if kind == "numeric":
        return pb.JointPart(id=id, text="how many", numeric=pb.BinnedNumericQuestion(edges=values))
    return pb.JointPart(id=id)


def joint(parts: list[pb.JointPart], mechanism: pb.Mechanism = GRR) -> pb.Question:
    return pb.Question(id="q4", joint=pb.JointQuestion(parts=parts), mechanism=mechanism)


def rr(alpha: float) -> pb.Mechanism:
    return pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha))


def grr(alpha: float) -> pb.Mechanism:
    return pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=alpha))


def oue(q: float) -> pb.Mechanism:
    return pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=q))


def olh(g: int, alpha: float) -> pb.Mechanism:
    return pb.Mechanism(olh=pb.OptimizedLocalHashing(g=g, alpha=alpha))


def item_rr(q: float) -> pb.Mechanism:
    return pb.Mechanism(item_rr=pb.ItemRandomizedResponse(q=q))


LONG = "x" * 45
NUMBERS = part("n", "numeric", [0.0, 10.0, 20.0, 40.0])
PARTS = [part("a"), part("b", "categorical", ["red", "x, y", "Blue"]), NUMBERS]

REFUSALS: dict[str, pb.Question] = {
    "no kind": pb.Question(id="q0", mechanism=GRR),
    "no mechanism": pb.Question(id="q0", binary=pb.BinaryQuestion()),
    "binary with grr": binary(GRR),
    "categorical with rr": categorical(["a", "b"], RR),
    "multi-select with oue": multi_select(["a", "b"], OUE),
    "joint with olh": joint(PARTS, OLH),
    "joint with item_rr": joint(PARTS, ITEM_RR),
    "registered built-in": binary(pb.Mechanism(registered=pb.RegisteredMechanism(name="grr"))),
    "registered unknown": categorical(
        ["a", "b"], pb.Mechanism(registered=pb.RegisteredMechanism(name="sue" * 20))
    ),
    "rr empty": binary(pb.Mechanism(randomized_response=pb.RandomizedResponse())),
    "rr alpha 1.5": binary(rr(1.5)),
    "rr alpha -0.25": binary(rr(-0.25)),
    "rr alpha nan": binary(rr(math.nan)),
    "rr alpha inf": binary(rr(math.inf)),
    "rr alpha 1": binary(rr(1.0)),
    "rr alpha 1 quoted id": binary(rr(1.0), id="it's"),
    "rr alpha 5e-324": binary(rr(5e-324)),
    "rr alpha largest below 1": binary(rr(1 - 2**-53)),
    "grr alpha 1": categorical(["a", "b", "c"], grr(1.0)),
    "grr alpha 2": categorical(["a", "b", "c"], grr(2.0)),
    "grr alpha 1e-300": categorical(["a", "b", "c"], grr(1e-300)),
    "grr one option": categorical(["a"]),
    "grr no options": categorical([]),
    "grr 1025 options": categorical([str(i) for i in range(1025)]),
    "grr 1024 options": categorical([str(i) for i in range(1024)]),
    "oue q 0": categorical(["a", "b"], oue(0.0)),
    "oue q 0.5": categorical(["a", "b"], oue(0.5)),
    "oue q -1e-05": categorical(["a", "b"], oue(-1e-05)),
    "oue q 1e16": categorical(["a", "b"], oue(1e16)),
    "oue q nan": categorical(["a", "b"], oue(math.nan)),
    "olh g 1": categorical(["a", "b"], olh(1, 0.5)),
    "olh g 0 alpha 0": categorical(["a", "b"], olh(0, 0.0)),
    "olh alpha 1": categorical(["a", "b"], olh(4, 1.0)),
    "olh alpha 0": categorical(["a", "b"], olh(4, 0.0)),
    "olh g max": categorical(["a", "b"], olh(2**32 - 1, 0.5)),
    "item_rr one item": multi_select(["a"]),
    "item_rr 65 items": multi_select([f"i{i}" for i in range(65)]),
    "item_rr q 0.5": multi_select(["a", "b"], item_rr(0.5)),
    "item_rr q 0": multi_select(["a", "b"], item_rr(0.0)),
    "duplicate options": categorical(["a", "b", "a"]),
    "options differing in case": categorical(["a", "A"]),
    "blank option": categorical(["a", " \u3000"]),
    "long option": categorical(["a", "y" * 201]),
    "option of 200 characters": categorical(["a", "y" * 200]),
    "long duplicate option": categorical([LONG, LONG]),
    "escaped duplicate option": categorical(["a\x1b[2J", "a\x1b[2J"]),
    "item with a comma": multi_select(["a", "b, c"]),
    "item called none": multi_select(["a", " None "]),
    "duplicate items in any case": multi_select(["Apple", "apple "]),
    "blank item": multi_select(["a", "\t"]),
    "one part": joint([part("a")]),
    "nine parts": joint([part(f"p{i}") for i in range(9)]),
    "bad part id": joint([part("a b"), part("c")]),
    "long part id": joint([part("p" * 65), part("c")]),
    "duplicate part ids": joint([part("a"), part("a")]),
    "part without kind": joint([part("a"), part("b", "none")]),
    "categorical part duplicate": joint([part("a"), part("b", "categorical", ["x", "x"])]),
    "numeric part one bin": joint([part("a"), part("n", "numeric", [0.0, 1.0])]),
    "numeric part no edges": joint([part("a"), part("n", "numeric", [])]),
    "numeric part decreasing": joint([part("a"), part("n", "numeric", [0.0, 2.0, 1.0])]),
    "numeric part infinite": joint([part("a"), part("n", "numeric", [0.0, math.inf, 2.0])]),
    "numeric part huge": joint([part("a"), part("n", "numeric", [0.0, 1e16, 2e16])]),
    "too many cells": joint([part("a", "categorical", list("abcdefghijklmnopqrstuvwxyz"))] * 3),
    "joint accepted": joint(PARTS),
    "joint oue accepted": joint(PARTS, OUE),
}

REFUSAL = """
return arguments[0].map((question) => window.deniable.refusal(question));
"""

ANSWERS: list[tuple[pb.Question, list[str]]] = [
    (
        binary(),
        [
            "yes",
            "Y",
            " No ",
            "n",
            "NO\t",
            "yes\u3000",
            "\x1cy\x1f",
            "yes\ufeff",
            "maybe",
            "",
            "ye s",
            "true",
            "1",
            "no\n",
        ],
    ),
    (
        categorical(["Red", "green", "Blue sky", "10", "x"]),
        [
            "red",
            "RED",
            " Blue sky ",
            "blue",
            "1",
            "3",
            "5",
            "6",
            "0",
            "01",
            "+1",
            "1.0",
            "10",
            "\u0663",
            "\u00b2",
            "Green ",
            "\u0661\u0660",
            "",
            "  ",
            "-1",
            "1_0",
            "\U0001d7d2",
        ],
    ),
    (
        multi_select(["Apple", "banana", "Cherry pie", " d "]),
        [
            "apple, cherry pie",
            "none",
            "NONE",
            "",
            "  ",
            "1,4",
            "1,,2",
            "apple,apple",
            "5",
            "0",
            "x",
            " d ",
            "D",
            "Apple ,2",
            "none,apple",
            ",",
            "4,3,2,1",
            "\u0662",
        ],
    ),
    (
        joint(PARTS),
        [
            "yes, red, 5",
            "no,2,40",
            "y, 1, 0",
            "yes, red, 40.0",
            "yes,red,41",
            "yes,red,-0",
            "yes,red,1_0",
            "yes,red,1e1",
            "yes,red,inf",
            "yes,red,nan",
            "yes,red,0x10",
            "yes, red",
            "yes,red,5,6",
            "maybe,red,5",
            "yes,x, y,5",
            "yes,2,5",
            "yes,blue,\u0663",
            "yes,red, 10 ",
            "yes,red,1__0",
            "yes,red,.5",
            "yes,red,5.",
            "yes,red,+5",
            "yes,red,\u0663.\u0665",
            "no,3,39.99999",
            "no,3,20",
            "no,3,19.999",
            "yes,red,",
            "yes,red,Infinity",
            "yes,red,1e-400",
            "yes,red,_1",
        ],
    ),
]

INSPECT = """
return arguments[0].map(([question, texts]) => window.deniable.inspect(question, texts));
"""


def python_refusal(question: pb.Question) -> str | None:
    try:
        check_mechanism(question)
    except RefusedError as error:
        return f"RefusedError: {error}"
    return None


def python_answer(text: str, question: pb.Question) -> dict[str, str]:
    try:
        value = parse_answer(text, question)
    except ValueError as error:
        return {"error": f"InvalidAnswerError: {error}"}
    return {"truth": str(value).lower() if isinstance(value, bool) else str(value)}


def test_refusals_are_the_python_clients(page: Any) -> None:
    names = list(REFUSALS)
    got = page.execute_script(REFUSAL, [MessageToDict(REFUSALS[name]) for name in names])
    wrong = [
        (name, page_said, python_said)
        for name, page_said in zip(names, got, strict=True)
        if page_said != (python_said := python_refusal(REFUSALS[name]))
    ]
    assert not wrong, wrong
    refused = sum(message is not None for message in got)
    print(f"\nrefusals: {len(names)} questions, {refused} refused, all as Python")


@pytest.fixture(scope="module")
def inspected(page: Any) -> list[dict[str, Any]]:
    payload = [[MessageToDict(question), texts] for question, texts in ANSWERS]
    result: list[dict[str, Any]] = page.execute_script(INSPECT, payload)
    return result


def test_answers_are_read_as_the_cli_reads_them(inspected: list[dict[str, Any]]) -> None:
    compared = 0
    for (question, texts), seen in zip(ANSWERS, inspected, strict=True):
        for text, got in zip(texts, seen["answers"], strict=True):
            want = python_answer(text, question)
            compared += 1
            if "invalid literal for int()" in want.get("error", ""):
                # Python's isdigit() takes superscripts that int() then refuses: both refuse.
                assert "error" in got, (text, got, want)
                continue
            assert got == want, (question.WhichOneof("kind"), text, got, want)
    print(f"\nanswers: {compared} texts read as the CLI reads them")


def test_hints_choices_and_parts_are_the_python_types(inspected: list[dict[str, Any]]) -> None:
    for (question, _), seen in zip(ANSWERS, inspected, strict=True):
        kind = question_type(str(question.WhichOneof("kind")))
        assert seen["hint"] == kind.answer_hint(question)
        assert seen["choices"] == kind.choices(question)
        assert seen["parts"] == [MessageToDict(part) for part in kind.parts(question)]
