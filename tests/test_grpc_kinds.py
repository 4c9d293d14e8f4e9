"""Multiple-choice and numeric questions through a real in-process server on 127.0.0.1:0."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import grpc
import numpy as np
import pytest

from aggregator._frequency import estimate_frequencies
from aggregator._mean import estimate_mean_from_reports
from aggregator._support import support_counts
from client._categorical import OlhReports
from client._remote import AggregatorClient, RemoteError
from client._values import perturbed_values
from shared._categorical import categorical_spec
from shared._frequency_oracle import CategoricalSpec
from shared._numeric import numeric_spec
from shared._wire import Spec, mechanism_message, question_spec
from shared.deniable.v1 import aggregator_pb2 as pb

Code = grpc.StatusCode
OPTIONS = ["iOS", "Android", "MacOS", "Windows", "Linux"]


def categorical(qid: str, spec: Spec) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Which OS?",
        categorical=pb.CategoricalQuestion(options=OPTIONS),
        mechanism=mechanism_message(spec),
    )


def numeric(qid: str, spec: Spec, lo: float = 0.0, hi: float = 40.0) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Hours?",
        numeric=pb.NumericQuestion(min=lo, max=hi),
        mechanism=mechanism_message(spec),
    )


def reports_for(survey: pb.Survey, qid: str, values: list[dict[str, Any]]) -> list[pb.Report]:
    question = next(q for q in survey.questions if q.id == qid)
    return [
        pb.Report(
            report_id=f"{qid}-{i}",
            survey_id=survey.id,
            question_id=qid,
            mechanism=question.mechanism,
            **value,
        )
        for i, value in enumerate(values)
    ]


CATEGORICAL = [
    categorical_spec("grr", 5, alpha=0.5),
    categorical_spec("oue", 5, epsilon=1.0),
    categorical_spec("olh", 5, epsilon=2.0),
]
NUMERIC = [
    numeric_spec(kind, 0.0, 40.0, 1.0) for kind in ("laplace", "duchi", "piecewise", "hybrid")
]


@pytest.mark.parametrize("spec", CATEGORICAL, ids=lambda s: s.kind)
def test_categorical_estimate_equals_the_library(
    admin: AggregatorClient, anonymous: AggregatorClient, spec: Spec
) -> None:
    survey = admin.create_survey("OS", [categorical("os", spec)])
    stored = survey.questions[0]
    assert question_spec(stored) == spec
    assert stored.privacy.epsilon == spec.epsilon
    assert stored.privacy.explanation == spec.explain()
    rng = np.random.default_rng(11)
    truths = rng.choice(5, size=600, p=[0.1, 0.4, 0.2, 0.2, 0.1])
    values = perturbed_values(spec, truths, rng)
    assert anonymous.submit_reports(reports_for(survey, "os", values)).stored == 600
    got = anonymous.get_estimate(survey.id, "os", confidence=0.9)
    if spec.kind == "grr":
        raw: Any = np.array([v["option"] for v in values])
    elif spec.kind == "oue":
        raw = np.array([np.unpackbits(np.frombuffer(v["bits"], np.uint8), bitorder="little")[:5]
                        for v in values]).astype(bool)  # fmt: skip
    else:
        hashed = [v["hashed"] for v in values]
        raw = OlhReports(
            np.array([h.a for h in hashed], np.uint64),
            np.array([h.b for h in hashed], np.uint64),
            np.array([h.value for h in hashed], np.int64),
        )
    assert isinstance(spec, CategoricalSpec)
    counts = support_counts(spec, raw)
    want = estimate_frequencies(counts, 600, spec, 0.9)
    assert (got.n, got.mechanism, got.epsilon) == (600, spec.kind, spec.epsilon)
    assert [o.option for o in got.options] == OPTIONS
    assert [o.support for o in got.options] == counts.tolist()
    assert [o.estimate_raw for o in got.options] == list(want.estimate_raw)
    assert [o.estimate for o in got.options] == list(want.estimate)
    assert [(o.ci_low, o.ci_high) for o in got.options] == list(
        zip(want.ci_low, want.ci_high, strict=True)
    )
    assert math.isclose(sum(o.estimate for o in got.options), 1.0)


@pytest.mark.parametrize("spec", NUMERIC, ids=lambda s: s.kind)
def test_numeric_estimate_equals_the_library(
    admin: AggregatorClient, anonymous: AggregatorClient, spec: Spec
) -> None:
    survey = admin.create_survey("Hours", [numeric("h", spec)])
    assert question_spec(survey.questions[0]) == spec
    rng = np.random.default_rng(12)
    truths = rng.uniform(0, 40, size=400)
    values = perturbed_values(spec, truths, rng)
    anonymous.submit_reports(reports_for(survey, "h", values[:150]))
    anonymous.submit_reports(reports_for(survey, "h", values))  # a resend plus the rest
    got = anonymous.get_estimate(survey.id, "h")
    want = estimate_mean_from_reports(spec, [v["number"] for v in values])  # type: ignore[arg-type]
    assert (got.n, got.mechanism, got.method) == (400, spec.kind, "t")
    assert got.estimate == want.estimate
    assert got.estimate_raw == want.estimate_raw
    assert (got.ci_low, got.ci_high) == (want.ci_low, want.ci_high)
    assert got.std_error_worst == want.std_error_worst
    assert 0.0 <= got.ci_low <= got.estimate <= got.ci_high <= 40.0


def rejected(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (pb.Question(id="q", text="t", categorical=pb.CategoricalQuestion(options=["a"]),
                     mechanism=mechanism_message(CATEGORICAL[0])), "options: need 2..1024"),
        (pb.Question(id="q", text="t", categorical=pb.CategoricalQuestion(options=["a", "a"]),
                     mechanism=mechanism_message(categorical_spec("grr", 2, alpha=0.5))),
         "options[1]: duplicate option 'a'"),
        (categorical("q", NUMERIC[0]), "mechanism: laplace does not apply to a categorical"),
        (pb.Question(id="q", text="t", categorical=pb.CategoricalQuestion(options=OPTIONS),
                     mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=1.0))),
         "gives no privacy"),
        (pb.Question(id="q", text="t", categorical=pb.CategoricalQuestion(options=OPTIONS),
                     mechanism=pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.7))),
         "questions[0].mechanism.oue.q: q must"),
        (numeric("q", NUMERIC[1], lo=5.0, hi=5.0), "questions[0].mechanism.duchi"),
        (pb.Question(id="q", text="t", numeric=pb.NumericQuestion(min=0, max=1),
                     mechanism=pb.Mechanism(duchi=pb.Duchi(bound=math.nan))),
         "questions[0].mechanism.duchi.bound"),
    ],
    ids=["one-option", "duplicate", "wrong-mechanism", "no-privacy", "bad-q", "empty-range",
         "nan-bound"],
)  # fmt: skip
def test_invalid_questions_are_rejected(
    admin: AggregatorClient, question: pb.Question, message: str
) -> None:
    error = rejected(lambda: admin.create_survey("Bad", [question]))
    assert error.code == Code.INVALID_ARGUMENT
    assert message in error.details
    assert admin.list_surveys(include_closed=True) == []


@pytest.fixture
def mixed(admin: AggregatorClient) -> pb.Survey:
    questions = [categorical(spec.kind, spec) for spec in CATEGORICAL]
    questions.append(numeric("duchi", NUMERIC[1]))
    return admin.create_survey("Mixed", questions)


@pytest.mark.parametrize(
    ("qid", "value", "field", "message"),
    [
        ("grr", {"option": 5}, "reports[1].option", "5 is not below k=5"),
        ("grr", {"bit": True}, "reports[0].option", "missing (grr reports carry option)"),
        ("oue", {"bits": b"\x01\x00"}, "reports[1].bits", "must be 1 bytes for k=5"),
        ("oue", {"bits": b"\x21"}, "reports[1].bits", "has padding bits set"),
        ("olh", {"hashed": pb.HashedOption(a=2**61 - 1, b=0, value=0)}, "reports[1].hashed.a",
         f"{2**61 - 1} is not below 2^61-1"),
        ("olh", {"hashed": pb.HashedOption(a=1, b=1, value=99)}, "reports[1].hashed.value",
         "99 is not below g="),
        ("duchi", {"number": 0.5}, "reports[1].number", "0.5 is not a possible duchi report"),
        ("duchi", {"number": math.nan}, "reports[1].number", "nan is not a possible"),
        ("duchi", {"number": math.inf}, "reports[1].number", "inf is not a possible"),
    ],
)  # fmt: skip
def test_bad_values_reject_the_batch_and_store_nothing(
    anonymous: AggregatorClient,
    mixed: pb.Survey,
    qid: str,
    value: dict[str, Any],
    field: str,
    message: str,
) -> None:
    spec = question_spec(next(q for q in mixed.questions if q.id == qid))
    good = perturbed_values(spec, [0 if qid != "duchi" else 1.0], np.random.default_rng(1))
    bad = reports_for(mixed, qid, [*good, value])
    if "missing" in message:
        bad = bad[1:]
    error = rejected(lambda: anonymous.submit_reports(bad))
    assert error.code == Code.INVALID_ARGUMENT
    assert f"{field}: {message}" in error.details
    assert anonymous.get_survey(mixed.id).reports == 0


def test_a_report_with_another_questions_mechanism_fails_the_precondition(
    anonymous: AggregatorClient, mixed: pb.Survey
) -> None:
    (report,) = reports_for(mixed, "grr", [{"option": 1}])
    report.mechanism.CopyFrom(mechanism_message(categorical_spec("grr", 5, alpha=0.25)))
    error = rejected(lambda: anonymous.submit_reports([report]))
    assert error.code == Code.FAILED_PRECONDITION
    assert "reports[0].mechanism: grr (alpha 0.25) differs from the survey's grr (alpha 0.5)" in (
        error.details
    )
