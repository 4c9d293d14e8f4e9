"""Multiple-choice and numeric questions through a real in-process server on 127.0.0.1:0."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import grpc
import numpy as np
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.mechanisms import (
    DuchiMechanism,
    FrequencyOracle,
    GeneralizedRandomizedResponse,
    HybridMechanism,
    LaplaceMechanism,
    Mechanism,
    OlhReports,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    RandomizedResponse,
    estimate_frequencies,
    mechanism_of,
)
from deniable.shared.mechanisms._mean import estimate_mean_from_reports
from deniable.shared.questions import (
    MAX_NUMERIC_BOUND,
    MIN_SURVEY_EPSILON,
    categorical_mechanism,
    check_question,
    numeric_mechanism,
    question_type,
)
from deniable.shared.stats._intervals import MAX_CONFIDENCE
from deniable.shared.wire.v1 import aggregator_pb2 as pb

Code = grpc.StatusCode
OPTIONS = ["iOS", "Android", "MacOS", "Windows", "Linux"]


def categorical(qid: str, spec: Mechanism) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Which OS?",
        categorical=pb.CategoricalQuestion(options=OPTIONS),
        mechanism=spec.to_message(),
    )


def numeric(qid: str, spec: Mechanism, lo: float = 0.0, hi: float = 40.0) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Hours?",
        numeric=pb.NumericQuestion(min=lo, max=hi),
        mechanism=spec.to_message(),
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
    categorical_mechanism("grr", 5, alpha=0.5),
    categorical_mechanism("oue", 5, epsilon=1.0),
    categorical_mechanism("olh", 5, epsilon=2.0),
]
NUMERIC = [
    numeric_mechanism(kind, 0.0, 40.0, 1.0) for kind in ("laplace", "duchi", "piecewise", "hybrid")
]


@pytest.mark.parametrize("spec", CATEGORICAL, ids=lambda s: s.name)
def test_categorical_estimate_equals_the_library(
    admin: AggregatorClient, anonymous: AggregatorClient, spec: Mechanism
) -> None:
    survey = admin.create_survey("OS", [categorical("os", spec)])
    stored = survey.questions[0]
    assert mechanism_of(stored) == spec
    assert stored.privacy.epsilon == spec.epsilon
    assert stored.privacy.explanation == spec.explain()
    rng = np.random.default_rng(11)
    truths = rng.choice(5, size=600, p=[0.1, 0.4, 0.2, 0.2, 0.1])
    values = spec.encode(spec.perturb_many(truths, rng))
    assert anonymous.submit_reports(reports_for(survey, "os", values)).stored == 600
    got = anonymous.get_estimate(survey.id, "os", confidence=0.9)
    if spec.name == "grr":
        raw: Any = np.array([v["option_fixed"] for v in values])
    elif spec.name == "oue":
        raw = np.array([np.unpackbits(np.frombuffer(v["bits"], np.uint8), bitorder="little")[:5]
                        for v in values]).astype(bool)  # fmt: skip
    else:
        hashed = [v["hashed"] for v in values]
        raw = OlhReports(
            np.array([h.a for h in hashed], np.uint64),
            np.array([h.b for h in hashed], np.uint64),
            np.array([h.value_fixed for h in hashed], np.int64),
        )
    assert isinstance(spec, FrequencyOracle)
    counts = spec.support_counts(raw)
    want = estimate_frequencies(counts, 600, spec, 0.9)
    assert (got.n, got.mechanism, got.epsilon) == (600, spec.name, spec.epsilon)
    assert [o.option for o in got.options] == OPTIONS
    assert [o.support for o in got.options] == counts.tolist()
    assert [o.estimate_raw for o in got.options] == list(want.estimate_raw)
    assert [o.estimate for o in got.options] == list(want.estimate)
    assert [(o.ci_low, o.ci_high) for o in got.options] == list(
        zip(want.ci_low, want.ci_high, strict=True)
    )
    assert math.isclose(sum(o.estimate for o in got.options), 1.0)


@pytest.mark.parametrize("spec", NUMERIC, ids=lambda s: s.name)
def test_numeric_estimate_equals_the_library(
    admin: AggregatorClient, anonymous: AggregatorClient, spec: Mechanism
) -> None:
    survey = admin.create_survey("Hours", [numeric("h", spec)])
    assert mechanism_of(survey.questions[0]) == spec
    rng = np.random.default_rng(12)
    truths = rng.uniform(0, 40, size=400)
    values = spec.encode(spec.perturb_many(truths, rng))
    anonymous.submit_reports(reports_for(survey, "h", values[:150]))
    anonymous.submit_reports(reports_for(survey, "h", values))  # a resend plus the rest
    got = anonymous.get_estimate(survey.id, "h")
    want = estimate_mean_from_reports(spec, [v["number"] for v in values])  # type: ignore[arg-type]
    assert (got.n, got.mechanism, got.method) == (400, spec.name, want.method)
    assert (got.coverage, want.method) == (
        want.coverage,
        "clopper-pearson" if spec.name == "duchi" else "t",
    )
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
                     mechanism=CATEGORICAL[0].to_message()), "options: need 2..1024"),
        (pb.Question(id="q", text="t", categorical=pb.CategoricalQuestion(options=["a", "a"]),
                     mechanism=categorical_mechanism("grr", 2, alpha=0.5).to_message()),
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
        (categorical("q", categorical_mechanism("oue", 5, epsilon=1e-4)),
         "questions[0].mechanism: epsilon 9.99"),
        (numeric("q", NUMERIC[0], lo=-1e300, hi=1e300),
         "questions[0].numeric.min: -1e+300 is beyond ±1e+15"),
    ],
    ids=["one-option", "duplicate", "wrong-mechanism", "no-privacy", "bad-q", "empty-range",
         "nan-bound", "epsilon-below-minimum", "wide-range"],
)  # fmt: skip
def test_invalid_questions_are_rejected(
    admin: AggregatorClient, question: pb.Question, message: str
) -> None:
    error = rejected(lambda: admin.create_survey("Bad", [question]))
    assert error.status == Code.INVALID_ARGUMENT
    assert message in error.details
    assert admin.list_surveys(include_closed=True) == []


@pytest.fixture
def mixed(admin: AggregatorClient) -> pb.Survey:
    questions = [categorical(spec.name, spec) for spec in CATEGORICAL]
    questions.append(numeric("duchi", NUMERIC[1]))
    return admin.create_survey("Mixed", questions)


@pytest.mark.parametrize(
    ("qid", "value", "field", "message"),
    [
        ("grr", {"option": 5}, "reports[1].option", "5 is not below k=5"),
        ("grr", {"bit": True}, "reports[0].option",
         "missing (grr reports carry option_fixed or option)"),
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
    spec = mechanism_of(next(q for q in mixed.questions if q.id == qid))
    good = spec.encode(spec.perturb_many([0 if qid != "duchi" else 1.0], np.random.default_rng(1)))
    bad = reports_for(mixed, qid, [*good, value])
    if "missing" in message:
        bad = bad[1:]
    error = rejected(lambda: anonymous.submit_reports(bad))
    assert error.status == Code.INVALID_ARGUMENT
    assert f"{field}: {message}" in error.details
    assert anonymous.get_survey(mixed.id).reports == 0


WIDE = [f"option {i}" for i in range(300)]  # options from 128 on take a 2-byte varint


def _older(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same reports as an older client encodes them: option, hashed.value varints."""
    older: list[dict[str, Any]] = []
    for value in values:
        if "option_fixed" in value:
            older.append({"option": value["option_fixed"]})
        else:
            h = value["hashed"]
            older.append({"hashed": pb.HashedOption(a=h.a, b=h.b, value=h.value_fixed)})
    return older


@pytest.mark.parametrize(
    "spec",
    [GeneralizedRandomizedResponse(300, 0.5), OptimizedLocalHashing(300, 200, 0.9)],
    ids=lambda s: s.name,
)
def test_older_and_constant_size_encodings_are_stored_and_counted_alike(
    admin: AggregatorClient, anonymous: AggregatorClient, spec: FrequencyOracle
) -> None:
    question = pb.Question(id="wide", text="Which?", mechanism=spec.to_message())
    question.categorical.options.extend(WIDE)
    survey = admin.create_survey("Wide", [question])
    rng = np.random.default_rng(3)
    reports = spec.perturb_many(np.arange(900) % 300, rng)
    values = spec.encode(reports)
    older = _older(values)
    sent = reports_for(survey, "wide", [*values[:300], *older[300:600], *values[600:]])
    for i in range(600, 900, 2):  # a batch that mixes both encodings
        sent[i].CopyFrom(reports_for(survey, "wide", older)[i])
    sizes = [r.ByteSize() - len(r.report_id) for r in sent]  # ids: "wide-0" to "wide-899"
    assert len(set(sizes[:300])) == 1
    assert len(set(sizes[300:600])) > 1  # the older encoding's sizes vary with the value
    assert anonymous.submit_reports(sent[:300]).stored == 300
    assert anonymous.submit_reports(sent[300:600]).stored == 300
    assert anonymous.submit_reports(sent[600:]).stored == 300
    resent = anonymous.submit_reports(sent[:10])
    assert (resent.stored, resent.already_stored) == (0, 10)
    got = anonymous.get_estimate(survey.id, "wide")
    assert got.n == 900
    assert [o.support for o in got.options] == spec.support_counts(reports).tolist()


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ({"option_fixed": 5}, "reports[1].option_fixed", "5 is not below k=5"),
        (
            {"hashed": pb.HashedOption(a=1, b=2, value=3, value_fixed=3)},
            "reports[1].hashed.value",
            "3 sent together with hashed.value_fixed; a report carries one hash value",
        ),
        ({"hashed": pb.HashedOption(a=1, b=2, value_fixed=99)}, "reports[1].hashed.value",
         "99 is not below g="),
    ],
    ids=["option-fixed-out-of-range", "two-hash-values", "value-fixed-out-of-range"],
)  # fmt: skip
def test_bad_constant_size_values_reject_the_batch_and_store_nothing(
    anonymous: AggregatorClient,
    mixed: pb.Survey,
    value: dict[str, Any],
    field: str,
    message: str,
) -> None:
    qid = "grr" if "option_fixed" in value else "olh"
    spec = mechanism_of(next(q for q in mixed.questions if q.id == qid))
    good = spec.encode(spec.perturb_many([0], np.random.default_rng(1)))
    error = rejected(lambda: anonymous.submit_reports(reports_for(mixed, qid, [*good, value])))
    assert error.status == Code.INVALID_ARGUMENT
    assert f"{field}: {message}" in error.details
    assert anonymous.get_survey(mixed.id).reports == 0


def test_a_report_with_another_questions_mechanism_fails_the_precondition(
    anonymous: AggregatorClient, mixed: pb.Survey
) -> None:
    (report,) = reports_for(mixed, "grr", [{"option": 1}])
    report.mechanism.CopyFrom(categorical_mechanism("grr", 5, alpha=0.25).to_message())
    error = rejected(lambda: anonymous.submit_reports([report]))
    assert error.status == Code.FAILED_PRECONDITION
    assert "reports[0].mechanism: grr (alpha 0.25) differs from the survey's grr (alpha 0.5)" in (
        error.details
    )


# --- the survey's limits: minimum epsilon, range, confidence -------------------------------

# Each mechanism as a function of one float parameter, that parameter certified at
# ε = 0.001 (from_epsilon), and the directions in which it raises and lowers ε.
BOUNDARY: dict[str, tuple[Callable[[float], Mechanism], float, float, float]] = {
    "randomized_response": (
        RandomizedResponse,
        RandomizedResponse.from_epsilon(MIN_SURVEY_EPSILON).alpha,
        1.0,
        0.0,
    ),
    "grr": (
        lambda alpha: GeneralizedRandomizedResponse(5, alpha),
        GeneralizedRandomizedResponse.from_epsilon(5, MIN_SURVEY_EPSILON).alpha,
        1.0,
        0.0,
    ),
    "olh": (
        lambda alpha: OptimizedLocalHashing(5, 2, alpha),
        OptimizedLocalHashing.from_epsilon(5, MIN_SURVEY_EPSILON).alpha,
        1.0,
        0.0,
    ),
    "oue": (
        lambda q: OptimizedUnaryEncoding(5, q),
        OptimizedUnaryEncoding.from_epsilon(5, MIN_SURVEY_EPSILON).q,
        0.0,
        0.5,
    ),
    "laplace": (lambda eps: LaplaceMechanism(0.0, 40.0, eps), MIN_SURVEY_EPSILON, math.inf, 0.0),
    "duchi": (
        lambda bound: DuchiMechanism(0.0, 40.0, bound),
        DuchiMechanism.from_epsilon(0.0, 40.0, MIN_SURVEY_EPSILON).bound,
        1.0,
        math.inf,
    ),
}


def question_for(spec: Mechanism) -> pb.Question:
    """A question ``q`` with ``spec``: its kind, the OPTIONS or the mechanism's range."""
    question = question_type(spec.question_type).question_for(spec, OPTIONS)
    question.id, question.text = "q", "t"
    return question


@pytest.mark.parametrize("kind", sorted(BOUNDARY))
def test_the_smallest_parameter_reaching_the_minimum_epsilon_is_accepted(kind: str) -> None:
    build, x, more, less = BOUNDARY[kind]
    while build(x).epsilon < MIN_SURVEY_EPSILON:
        x = math.nextafter(x, more)
    while build(math.nextafter(x, less)).epsilon >= MIN_SURVEY_EPSILON:
        x = math.nextafter(x, less)
    at, below = build(x), build(math.nextafter(x, less))
    spec = check_question(question_for(at), "questions[0]")
    assert spec == at
    assert spec.epsilon == at.epsilon >= MIN_SURVEY_EPSILON
    with pytest.raises(ValueError, match=r"^questions\[0\]\.mechanism: epsilon ") as refused:
        check_question(question_for(below), "questions[0]")
    assert str(refused.value).startswith(
        f"questions[0].mechanism: epsilon {below.epsilon!r} of {kind} ("
    )
    assert "is below the minimum 0.001" in str(refused.value)


@pytest.mark.parametrize("kind", ["piecewise", "hybrid"])
def test_grid_mechanisms_at_the_minimum_epsilon(kind: str) -> None:
    # Piecewise certifies about 1e-6 below the request; Hybrid there is pure Duchi.
    accepted = numeric_mechanism(kind, 0.0, 40.0, MIN_SURVEY_EPSILON * (1 + 1e-5))
    assert check_question(question_for(accepted), "q").epsilon == accepted.epsilon
    below = numeric_mechanism(kind, 0.0, 40.0, math.nextafter(MIN_SURVEY_EPSILON, 0.0))
    assert below.epsilon < MIN_SURVEY_EPSILON
    with pytest.raises(ValueError, match=r"^q\.mechanism: epsilon .* below the minimum"):
        check_question(question_for(below), "q")


@pytest.mark.parametrize(
    ("lo", "hi", "field"),
    [
        (-MAX_NUMERIC_BOUND, MAX_NUMERIC_BOUND, None),
        (math.nextafter(-MAX_NUMERIC_BOUND, -math.inf), 0.0, "min"),
        (0.0, math.nextafter(MAX_NUMERIC_BOUND, math.inf), "max"),
        (1.5e15, 2e15, "min"),
        (-1e300, 1e300, "min"),
    ],
)
def test_a_numeric_range_may_reach_but_not_pass_the_bound(
    lo: float, hi: float, field: str | None
) -> None:
    for spec in NUMERIC:
        wide = numeric_mechanism(spec.name, lo, hi, 1.0)
        if field is None:
            check_question(question_for(wide), "questions[2]")
            continue
        with pytest.raises(ValueError, match=r"^questions\[2\]\.numeric\.") as refused:
            check_question(question_for(wide), "questions[2]")
        value = lo if field == "min" else hi
        assert str(refused.value) == (
            f"questions[2].numeric.{field}: {value!r} is beyond ±1e+15, the largest magnitude "
            "of a numeric question's range"
        )


def test_estimates_at_the_extremes_that_are_accepted_are_finite(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    # The widest range, the smallest epsilon and the highest confidence, with reports at
    # the mechanisms' largest values: every figure of every estimate is finite.
    specs: list[Mechanism] = [
        *(numeric_mechanism(k, -MAX_NUMERIC_BOUND, MAX_NUMERIC_BOUND, MIN_SURVEY_EPSILON)
          for k in ("laplace", "duchi", "hybrid")),
        numeric_mechanism("piecewise", -MAX_NUMERIC_BOUND, MAX_NUMERIC_BOUND, 1.001e-3),
        *(categorical_mechanism(k, 5, MIN_SURVEY_EPSILON) for k in ("grr", "olh")),
        OptimizedLocalHashing(5, 2**32 - 1, 2.5e-13),  # the largest hash range: smallest p* - q*
        categorical_mechanism("oue", 5, 1.001e-3),
        RandomizedResponse.from_epsilon(MIN_SURVEY_EPSILON),
    ]  # fmt: skip
    questions = []
    for i, spec in enumerate(specs):
        question = question_for(spec)
        question.id = f"q{i}"
        questions.append(question)
    survey = admin.create_survey("Extremes", questions)
    reports = []
    for question, spec in zip(survey.questions, specs, strict=True):
        if isinstance(spec, RandomizedResponse):
            values: list[dict[str, Any]] = [{"bit": True}, {"bit": True}]
        elif isinstance(spec, GeneralizedRandomizedResponse):
            values = [{"option": 0}, {"option": 0}]
        elif isinstance(spec, OptimizedLocalHashing):
            values = [{"hashed": pb.HashedOption(a=1, b=0, value=0)}] * 2
        elif isinstance(spec, OptimizedUnaryEncoding):
            values = [{"bits": b"\x01"}] * 2
        elif isinstance(
            spec, LaplaceMechanism | DuchiMechanism | PiecewiseMechanism | HybridMechanism
        ):
            values = [{"number": spec.bound}] * 2  # the largest report
        else:
            raise AssertionError(spec)
        reports += reports_for(survey, question.id, values)
    assert anonymous.submit_reports(reports).stored == len(reports)
    for question in survey.questions:
        for method in ("clopper-pearson", "wilson", "wald", "chebyshev"):
            got = anonymous.get_estimate(survey.id, question.id, MAX_CONFIDENCE, method)
            figures = [got.estimate, got.estimate_raw, got.ci_low, got.ci_high, got.std_error]
            for option in got.options:
                figures += [option.estimate, option.estimate_raw, option.ci_low,
                            option.ci_high, option.std_error]  # fmt: skip
            figures += [got.std_error_worst, got.epsilon]
            assert all(math.isfinite(f) for f in figures), (question.id, method, got)
            assert got.confidence == MAX_CONFIDENCE
