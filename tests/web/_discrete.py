"""The discrete questions the browser conformance tests share, and the Python client's reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToDict

from deniable.client._answer import build_report, check_mechanism, parse_answer
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    ItemRandomizedResponse,
    Mechanism,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
)
from deniable.shared.questions import question_from_spec, question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

EPSILONS = (1.0, 3.0)
"""The two privacy levels every mechanism is compared at."""

JOINT_PARTS = [
    {"id": "smoker", "type": "binary"},
    {"id": "colour", "type": "categorical", "options": ["red", "green", "blue"]},
    {"id": "age", "type": "numeric", "min": 0, "max": 80, "bins": 4},
]


@dataclass(frozen=True)
class Case:
    """One question (built by the Python API) and true answers to it, as the CLI takes them."""

    name: str
    question: pb.Question
    mechanism: Mechanism
    truths: tuple[str, ...]

    @property
    def json(self) -> dict[str, Any]:
        """The question as the page takes it (proto3 JSON)."""
        return MessageToDict(self.question)


def case(name: str, spec: dict[str, Any], truths: tuple[str, ...]) -> Case:
    """A question from a survey spec entry, checked by the Python client as it would be."""
    question, mechanism = question_from_spec({"id": name.replace(" ", "-"), **spec}, name)
    check_mechanism(question)
    return Case(name, question, mechanism, truths)


def cases(epsilon: float) -> list[Case]:
    """Every discrete mechanism and question type at ``epsilon``, with a few truths each."""
    options = {"type": "categorical", "options": [f"o{i}" for i in range(10)], "epsilon": epsilon}
    return [
        case(f"rr {epsilon}", {"type": "binary", "epsilon": epsilon}, ("yes", "no")),
        case(f"grr {epsilon}", {**options, "mechanism": "grr"}, ("o0", "4", "O9")),
        case(f"oue {epsilon}", {**options, "mechanism": "oue"}, ("1", "o9")),
        case(f"olh {epsilon}", {**options, "mechanism": "olh"}, ("1", "5", "10")),
        case(
            f"item_rr {epsilon}",
            {"type": "multi_select", "items": ["a", "b", "c", "d", "e"], "epsilon": epsilon},
            ("none", "a, C", "1,2,3,4,5"),
        ),
        case(
            f"joint grr {epsilon}",
            {"type": "joint", "parts": JOINT_PARTS, "epsilon": epsilon, "mechanism": "grr"},
            ("yes, green, 35", "no,1,0", "yes,blue,80"),
        ),
        case(
            f"joint oue {epsilon}",
            {"type": "joint", "parts": JOINT_PARTS, "epsilon": epsilon, "mechanism": "oue"},
            ("no, red, 79.5", "yes,3,20"),
        ),
    ]


def case_of(name: str, mechanism: Mechanism, truths: tuple[str, ...]) -> Case:
    """A question of the mechanism's type with its parameters as given (options named o0...)."""
    kind = question_type(mechanism.question_type)
    k = getattr(mechanism, "k", 2)
    question = kind.question_for(mechanism, [f"o{i}" for i in range(k)] if k > 2 else [])
    question.id = name.replace(" ", "-").replace("=", "")
    check_mechanism(question)
    return Case(name, question, mechanism, truths)


def parameter_cases() -> list[Case]:
    """Parameters that the two ε do not reach: one-byte keep draws, wider uniform words."""
    return [
        case_of("rr alpha=0.5", RandomizedResponse(0.5), ("yes", "no")),
        case_of("grr k=300 alpha=0.5", GeneralizedRandomizedResponse(300, 0.5), ("1", "o299")),
        case_of("olh g=70001", OptimizedLocalHashing(50, 70001, 0.25), ("o0", "50")),
        case_of("olh g=2^32-1", OptimizedLocalHashing(50, 2**32 - 1, 0.75), ("7",)),
        case_of("oue k=300", OptimizedUnaryEncoding(300, 0.125), ("300",)),
        case_of("item_rr k=64", ItemRandomizedResponse(64, 0.375), ("none", "64", "1, 9, 17")),
    ]


class ReplayGenerator(np.random.Generator):
    """A generator whose ``bytes`` replays given bytes in order and counts what was read.

    The Python client reads all of a report's randomness through ``rng.bytes`` when a
    generator is injected (the report id first, then the mechanism's samplers).
    """

    def __init__(self, data: bytes) -> None:
        super().__init__(np.random.PCG64(0))
        self._data = data
        self.used = 0

    def bytes(self, length: int) -> bytes:
        if self.used + length > len(self._data):
            raise RuntimeError("replayed bytes ran out")
        chunk = self._data[self.used : self.used + length]
        self.used += length
        return chunk


def python_report(item: Case, truth: str, data: bytes) -> tuple[pb.Report, int]:
    """The Python client's report of ``truth`` from the random bytes ``data``, and bytes read."""
    rng = ReplayGenerator(data)
    prepared = build_report(
        "", item.question, item.mechanism, parse_answer(truth, item.question), rng
    )
    return prepared.report, rng.used
