"""What the Python client computes, for the page's unit tests to match (client/web/test).

``python -m tests.web._fixtures`` rewrites ``client/web/test/python-fixtures.json``;
``tests/web/test_fixtures.py`` checks that the committed file is what this module gives.
"""

from __future__ import annotations

import base64
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

from deniable.client._content import content_of, normalized_text
from deniable.client._memo import definition_of
from deniable.client._policy import round_down, round_up
from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    PiecewiseMechanism,
    mechanism_of,
)
from deniable.shared.mechanisms._parameters import percent
from deniable.shared.text import describe_character, first_unsafe, visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

FIXTURES = Path(__file__).resolve().parents[2] / "client/web/test/python-fixtures.json"


def _question(qid: str, text: str, mechanism: pb.Mechanism, **kind: Any) -> pb.Question:
    return pb.Question(id=qid, text=text, mechanism=mechanism, **kind)


def _numeric(qid: str, lo: float, hi: float, mechanism: Any) -> pb.Question:
    numeric = pb.NumericQuestion(min=lo, max=hi)
    return _question(qid, f"How much ({qid})?", mechanism.to_message(), numeric=numeric)


def questions() -> list[pb.Question]:
    """One question of every kind and mechanism, with texts that normalization changes."""
    rr = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5))
    categorical = pb.CategoricalQuestion(options=["Red", " GREEN\t", "blue"])
    found = [
        _question("cheated", "Did you cheat?", rr, binary=pb.BinaryQuestion()),
        _question(
            "again",
            "  Did you\tCHEAT? ",
            pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.46211715726000974)),
            binary=pb.BinaryQuestion(),
        ),
        _question(
            "colour",
            "Favourite colour?",
            pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
            categorical=categorical,
        ),
        _question(
            "pair",
            "Which one?",
            pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.25)),
            categorical=pb.CategoricalQuestion(options=["a", "b"]),
        ),
        _question(
            "street",
            "Straße ﬁnal ΟΔΟΣ ＡＢＣ\u00a0x\u3000y",
            pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25)),
            categorical=pb.CategoricalQuestion(options=[f"o{i}" for i in range(5)]),
        ),
        _question(
            "hashed",
            "Ten options",
            pb.Mechanism(olh=pb.OptimizedLocalHashing(g=4, alpha=0.5)),
            categorical=pb.CategoricalQuestion(options=[f"Ｏption {i}" for i in range(10)]),
        ),
        _question(
            "fruit",
            "Which fruit?",
            pb.Mechanism(item_rr=pb.ItemRandomizedResponse(q=0.2)),
            multi_select=pb.MultiSelectQuestion(items=["apples", "pears", "plums"]),
        ),
        _numeric("laplace", 0.0, 100.0, LaplaceMechanism.from_epsilon(0.0, 100.0, 1.0, 16)),
        _numeric("duchi", 0.0, 120.0, DuchiMechanism.from_epsilon(0.0, 120.0, 1.0)),
        _numeric("piecewise", -5.5, 1e15, PiecewiseMechanism.from_epsilon(-5.5, 1e15, 2.0)),
        _numeric("hybrid", 1e-05, 10.0, HybridMechanism.from_epsilon(1e-05, 10.0, 3.0)),
        _question(
            "habits",
            "Your habits",
            pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.3)),
            joint=pb.JointQuestion(
                parts=[
                    pb.JointPart(id="smoke", text="Smoke?", binary=pb.BinaryQuestion()),
                    pb.JointPart(id="team", text="Team", categorical=categorical),
                    pb.JointPart(
                        id="age",
                        text="Age",
                        numeric=pb.BinnedNumericQuestion(edges=[1e-05, 0.1, 18.0, 1e15]),
                    ),
                ]
            ),
        ),
    ]
    parameters = {"zeta": 1.0, "alpha": 2.5, "id": 3}
    registered = pb.Mechanism(registered=pb.RegisteredMechanism(name="mine", parameters=parameters))
    found.append(_question("ext", "Extension", registered, binary=pb.BinaryQuestion()))
    with_privacy = pb.Question()
    with_privacy.CopyFrom(found[0])
    with_privacy.privacy.epsilon = 123.0
    with_privacy.privacy.explanation = "The server's own words"
    found.append(with_privacy)
    return found


def _question_fixture(question: pb.Question) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": question.id,
        "binary": base64.b64encode(question.SerializeToString(deterministic=True)).decode("ascii"),
        "content": content_of(question),
        "definition": definition_of(question),
    }
    if question.mechanism.WhichOneof("kind") != "registered":
        mechanism = mechanism_of(question)
        ratio = mechanism.privacy_ratio
        entry |= {
            "name": mechanism.name,
            "epsilon": mechanism.epsilon,
            "ratio": None if ratio is None else [str(ratio.numerator), str(ratio.denominator)],
            "explain": mechanism.explain(),
        }
    return entry


_NUMBERS = [
    0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 2.675, 1.005, 0.045, 0.995, 99.5, 0.1, 1e-05, 1e-4,
    123456789.0, 1e15, 1e16, 1.5e16, 12345.678, 999.995, 1000.0, 1234.5, 5e-324, -3.25,
    2.2250738585072014e-308, 1.7976931348623157e308, 2.718281828459045, 1.0986122886681098,
    0.6931471805599453, 37.42994775023705, 0.00012345, 7.389056098930649, 65504.0, 1e21, 123e-20,
]  # fmt: skip


def _number_fixture(x: float) -> dict[str, Any]:
    return {
        "x": x,
        "repr": repr(x),
        "f2": f"{x:.2f}",
        "f4": f"{x:.4f}",
        "pct": f"{x:.0%}",
        "g": f"{x:g}",
        "g3": f"{x:.3g}",
        "up": round_up(x) if math.isfinite(x * 10_000) else None,
        "down": round_down(x) if math.isfinite(x * 10_000) else None,
    }


_FRACTIONS = [
    (1, 3), (2, 3), (1, 10), (3, 2), (10**400, 3), (1, 10**400), (2**1100, 1), (1, 2**1074),
    (3, 2**1075), (1, 2**1075), (2**53 + 1, 1), (2**54 + 3, 2), (9007199254740993, 2**60),
    (-7, 9), (123456789123456789123456789, 987654321), (5, 2**1076), (2**1024 - 2**970, 1),
]  # fmt: skip

_SUMS = [
    [0.1, 0.2, 0.3],
    [1e100, 1.0, -1e100],
    [1.0986122886681098, 1.0986122886681098, 2.0],
    [0.1] * 10,
    [2.220446049250313e-16, 1.0, 2.220446049250313e-16],
    [9.999999999999998, 1e-15],
    [],
]

_TEXTS = [
    "  Did you\tCHEAT?\n",
    "Straße",
    "ΟΔΟΣ Σ",
    "ﬁnal ＡＢＣ",
    "a\u00a0b\u2003c\u3000d\x1ce\x85f\ufeffg",
    "İstanbul ǅ ŉ ᾳ",
    "Ꭰ ꭰ",
]


_UNSAFE = [
    "plain ünïcödé 😀",
    "Exam\x1b[2J\x1b[H\rPrivacy cost now: none\x08\x08",
    "\u202etxet\u2066x\x9b",
    "line\u2028break\u2029\x7f\x00\t",
    "😀\u200f",
]


def _unsafe(text: str) -> dict[str, Any]:
    found = first_unsafe(text)
    return {
        "text": text,
        "visible": visible(text),
        "first": None if found is None else [found[0], describe_character(found[1])],
    }


def _float(value: Fraction) -> str:
    try:
        return repr(float(value))
    except OverflowError:
        return "inf"


def fixtures() -> dict[str, Any]:
    """Everything the unit tests compare with, as one JSON-ready document."""
    return {
        "questions": [_question_fixture(question) for question in questions()],
        "numbers": [_number_fixture(x) for x in _NUMBERS],
        "fractions": [
            {"n": str(n), "d": str(d), "float": _float(Fraction(n, d))} for n, d in _FRACTIONS
        ],
        "sums": [{"values": values, "sum": repr(math.fsum(values))} for values in _SUMS],
        "percents": [
            {"n": n, "d": d, "text": percent(Fraction(n, d))}
            for n, d in [(1, 2), (199, 200), (1991, 2000), (999, 1000), (1, 200), (3, 200), (5, 1)]
        ],
        "texts": [{"text": text, "normalized": normalized_text(text)} for text in _TEXTS],
        "unsafe": [_unsafe(text) for text in _UNSAFE],
    }


def render() -> str:
    """The fixtures file's text."""
    return json.dumps(fixtures(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    FIXTURES.write_text(render(), encoding="utf-8")
