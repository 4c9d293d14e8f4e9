"""Joint questions through a real in-process server on 127.0.0.1:0: surveys, reports, estimates."""

from __future__ import annotations

import secrets

import grpc
import numpy as np
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

YES_NO = pb.BinaryQuestion()


def joint(*parts: pb.JointPart, mechanism: pb.Mechanism | None = None) -> pb.Question:
    if mechanism is None:
        mechanism = GeneralizedRandomizedResponse(k=4, alpha=0.5).to_message()
    return pb.Question(
        id="q", text="Joint?", joint=pb.JointQuestion(parts=list(parts)), mechanism=mechanism
    )


def rejected(question: pb.Question, admin: AggregatorClient) -> RemoteError:
    with pytest.raises(RemoteError) as caught:
        admin.create_survey("Bad", [question])
    return caught.value


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (joint(pb.JointPart(id="a", binary=YES_NO)),
         "questions[0].joint.parts: need 2..8 parts, got 1"),
        (joint(pb.JointPart(id="a", binary=YES_NO), pb.JointPart(id="a", binary=YES_NO)),
         "questions[0].joint.parts[1].id: duplicate part id 'a'"),
        (joint(pb.JointPart(id="a", binary=YES_NO), pb.JointPart(id="b")),
         "questions[0].joint.parts[1]: missing its kind"),
        (joint(pb.JointPart(id="a", binary=YES_NO),
               pb.JointPart(id="b", numeric=pb.BinnedNumericQuestion(edges=[0, float("nan"), 2]))),
         "questions[0].joint.parts[1].numeric.edges[1]: must be finite"),
        (joint(pb.JointPart(id="a", binary=YES_NO), pb.JointPart(id="b", binary=YES_NO),
               mechanism=OptimizedLocalHashing.from_epsilon(4, 1.0).to_message()),
         "questions[0].mechanism: olh does not apply to a joint question (expected grr or oue)"),
        (joint(*[pb.JointPart(id=f"p{i}", categorical=pb.CategoricalQuestion(
                  options=[str(v) for v in range(40)])) for i in range(2)],
               mechanism=OptimizedUnaryEncoding.from_epsilon(1024, 1.0).to_message()),
         "questions[0].joint.parts: the parts have 40 x 40 = 1,600 cells, above the maximum 1024"),
    ],
    ids=["one-part", "duplicate-id", "no-kind", "nan-edge", "olh", "too-many-cells"],
)  # fmt: skip
def test_invalid_joint_questions_are_rejected(
    admin: AggregatorClient, question: pb.Question, message: str
) -> None:
    error = rejected(question, admin)
    assert error.status == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details, error.details
    assert admin.list_surveys(include_closed=True) == []


def test_joint_reports_estimate_the_cross_tab(admin: AggregatorClient) -> None:
    parts = (pb.JointPart(id="a", binary=YES_NO),
             pb.JointPart(id="b", numeric=pb.BinnedNumericQuestion(edges=[0, 1, 5])))  # fmt: skip
    oue = OptimizedUnaryEncoding.from_epsilon(4, 2.0)
    survey = admin.create_survey("Joint", [joint(*parts, mechanism=oue.to_message())])
    rng = np.random.default_rng(3)
    truths = rng.choice(4, size=3000, p=[0.4, 0.1, 0.1, 0.4])
    values = oue.encode(oue.perturb_many(truths, rng))
    reports = [
        pb.Report(report_id=secrets.token_hex(16), survey_id=survey.id, question_id="q",
                  mechanism=survey.questions[0].mechanism, **value)
        for value in values
    ]  # fmt: skip
    admin.submit_reports(reports)
    estimate = admin.get_estimate(survey.id, "q", 0.95, "clopper-pearson", simultaneous=True)
    assert [o.option for o in estimate.options] == [
        "a=no, b=[0, 1)", "a=no, b=[1, 5]", "a=yes, b=[0, 1)", "a=yes, b=[1, 5]",
    ]  # fmt: skip
    assert estimate.simultaneous
    assert "Bonferroni over 4 values" in estimate.joint_coverage
    (pair,) = estimate.associations
    # scores: a 0/1, b the midpoints 0.5 and 3: true covariance 0.4 - 0.5·0.5 = 0.15 · 2.5
    assert pair.covariance_low <= 0.15 * 2.5 <= pair.covariance_high
    assert pair.correlation_low <= 0.6 <= pair.correlation_high
    a_yes = estimate.marginals[0].values[1]
    assert a_yes.ci_low <= 0.5 <= a_yes.ci_high


def test_a_report_outside_the_cells_is_refused_and_nothing_stored(admin: AggregatorClient) -> None:
    parts = (pb.JointPart(id="a", binary=YES_NO), pb.JointPart(id="b", binary=YES_NO))
    survey = admin.create_survey("Joint", [joint(*parts)])
    mechanism = survey.questions[0].mechanism
    reports = [
        pb.Report(report_id=secrets.token_hex(16), survey_id=survey.id, question_id="q",
                  mechanism=mechanism, option_fixed=option)
        for option in (0, 3, 4)
    ]  # fmt: skip
    with pytest.raises(RemoteError) as caught:
        admin.submit_reports(reports)
    assert caught.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "reports[2]" in caught.value.details
    assert "4" in caught.value.details
    assert admin.get_survey(survey.id).reports == 0
