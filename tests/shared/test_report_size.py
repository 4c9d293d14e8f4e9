"""Constant-size reports: every report of a mechanism serializes to one size, whatever its value.

A report's size is visible to anyone who sees TLS record sizes, so it must not depend on
the randomized value (and so, through it, on the true answer). Each mechanism perturbs
thousands of true values covering its whole domain, ends included, through the client's
own report builder, and every serialized ``Report`` must have exactly the same size; so
must a participant's whole ``SubmitReportsRequest`` for a fixed set of questions.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.client import build_report, build_reports
from deniable.shared.mechanisms import (
    DuchiMechanism,
    GeneralizedRandomizedResponse,
    HybridMechanism,
    LaplaceMechanism,
    Mechanism,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    RandomizedResponse,
)
from deniable.shared.mechanisms._universal_hash import HASH_MAX_RANGE
from deniable.shared.questions import Answer
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.test_extension_mechanism import SymmetricUnaryEncoding

REPORTS = 3000  # true values per mechanism: every option at least twice for k <= 1024


def question_for(mechanism: Mechanism, question_id: str = "q") -> pb.Question:
    """A question of the mechanism's type that carries it."""
    question = pb.Question(id=question_id, text="?", mechanism=mechanism.to_message())
    if mechanism.question_type == "binary":
        question.binary.SetInParent()
    elif mechanism.question_type == "categorical":
        k = int(getattr(mechanism, "k"))  # noqa: B009 - categorical mechanisms have k
        question.categorical.options.extend(f"option {i}" for i in range(k))
    else:
        question.numeric.min = float(getattr(mechanism, "lo"))  # noqa: B009
        question.numeric.max = float(getattr(mechanism, "hi"))  # noqa: B009
    return question


def truths_for(mechanism: Mechanism, count: int) -> list[Answer]:
    """``count`` true answers covering the whole domain, both ends included."""
    if mechanism.question_type == "binary":
        return [bool(i % 2) for i in range(count)]
    if mechanism.question_type == "categorical":
        k = int(getattr(mechanism, "k"))  # noqa: B009
        return [i % k for i in range(count)]
    lo, hi = float(getattr(mechanism, "lo")), float(getattr(mechanism, "hi"))  # noqa: B009
    return [float(x) for x in np.linspace(lo, hi, count)]


MECHANISMS: list[Mechanism] = [
    RandomizedResponse(alpha=0.5),
    RandomizedResponse(alpha=1 - 2**-20),
    GeneralizedRandomizedResponse(k=2, alpha=0.5),
    GeneralizedRandomizedResponse(k=128, alpha=0.3),
    GeneralizedRandomizedResponse(k=129, alpha=0.9),
    GeneralizedRandomizedResponse(k=1024, alpha=0.99),
    OptimizedUnaryEncoding(k=2, q=0.25),
    OptimizedUnaryEncoding(k=9, q=0.1),
    OptimizedUnaryEncoding(k=1024, q=0.01),
    OptimizedLocalHashing(k=2, g=2, alpha=0.5),
    OptimizedLocalHashing(k=1024, g=3, alpha=0.9),
    OptimizedLocalHashing(k=1024, g=200, alpha=0.999),
    OptimizedLocalHashing(k=50, g=70_000, alpha=0.9999),
    OptimizedLocalHashing(k=1024, g=HASH_MAX_RANGE, alpha=1 - 2**-40),
    LaplaceMechanism.from_epsilon(0.0, 1.0, 1.0),
    LaplaceMechanism.from_epsilon(-1e6, 1e9, 8.0),
    DuchiMechanism.from_epsilon(0.0, 1.0, 0.5),
    DuchiMechanism.from_epsilon(-3.0, 7.0, 4.0),
    PiecewiseMechanism.from_epsilon(0.0, 1.0, 1.0),
    PiecewiseMechanism.from_epsilon(-100.0, 5.0, 6.0),
    HybridMechanism.from_epsilon(0.0, 1.0, 2.0),
    HybridMechanism.from_epsilon(10.0, 20.0, 0.5),
    SymmetricUnaryEncoding(k=5, q=0.25),  # a registered mechanism: Report.encoded
    SymmetricUnaryEncoding(k=300, q=0.1),
]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_every_report_of_a_mechanism_has_the_same_size(mechanism: Mechanism) -> None:
    question = question_for(mechanism)
    sizes: dict[int, str] = {}
    for truth in truths_for(mechanism, REPORTS):  # the OS CSPRNG, as participants use it
        report = build_report("survey-1", question, mechanism, truth).report
        sizes.setdefault(report.ByteSize(), mechanism.show_value(report))
    assert len(sizes) == 1, f"sizes by an example value: {sizes}"


def test_a_participants_whole_request_has_one_size_for_a_fixed_set_of_questions() -> None:
    chosen = [MECHANISMS[0], MECHANISMS[5], MECHANISMS[8], MECHANISMS[12], MECHANISMS[20]]
    questions = [question_for(m, f"q{i}") for i, m in enumerate(chosen)]
    survey = pb.Survey(id="survey-1", questions=questions, state=pb.SURVEY_STATE_OPEN)
    answers = [truths_for(m, 400) for m in chosen]
    sizes = set()
    for row in range(400):
        by_question = {q.id: answers[i][row] for i, q in enumerate(questions)}
        reports = [item.report for item in build_reports(survey, by_question)]
        request = pb.SubmitReportsRequest(reports=reports, enrollment_token="t" * 43)
        sizes.add(request.ByteSize())
    assert len(sizes) == 1, sorted(sizes)
