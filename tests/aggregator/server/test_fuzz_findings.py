"""Minimal cases of the bugs the RPC fuzzer (test_fuzz_rpc.py) found, one test per bug.

Each failed before its fix (they were strict xfails until then) and now pins the fixed
behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf.message import Message

from deniable.shared import RandomizedResponse
from deniable.shared.questions import MAX_SURVEY_EPSILON
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server import _fuzz_strategies as fs
from tests.aggregator.server._fuzz_env import REQUEST, Code, Env, start_env, stop_env


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """One server for the module (see ``start_env``)."""
    running = start_env(tmp_path_factory.mktemp("findings") / "aggregator.db")
    yield running
    stop_env(running)


@pytest.mark.parametrize("method", sorted(set(REQUEST) - {"SubmitReports"}))
def test_undecodable_requests_are_invalid_argument(env: Env, method: str) -> None:
    outcome = env.checked(method, b"\xff", expect=False)  # a truncated tag: not a message
    assert outcome.code == Code.INVALID_ARGUMENT, outcome


@pytest.mark.parametrize("method", sorted(set(REQUEST) - {"ListSurveys"}))
def test_a_100_kb_value_is_refused_with_its_own_status(env: Env, method: str) -> None:
    yesno, huge = env.surveys["yesno"], fs.HUGE
    report = env.targets["open"][0].report(next(env.ids))
    report.survey_id = huge
    request, code = {
        "CreateSurvey": (
            pb.CreateSurveyRequest(title="t", questions=[pb.Question(id=huge)]),
            Code.INVALID_ARGUMENT,
        ),
        "GetSurvey": (pb.GetSurveyRequest(survey_id=huge), Code.NOT_FOUND),
        "CloseSurvey": (pb.CloseSurveyRequest(survey_id=huge), Code.NOT_FOUND),
        "SubmitReports": (pb.SubmitReportsRequest(reports=[report]), Code.NOT_FOUND),
        "GetEstimate": (
            pb.GetEstimateRequest(survey_id=yesno.id, question_id=huge),
            Code.NOT_FOUND,
        ),
        "IssueTokens": (pb.IssueTokensRequest(survey_id=huge, count=1), Code.NOT_FOUND),
        "ExportReports": (pb.ExportReportsRequest(survey_id=huge), Code.NOT_FOUND),
    }[method]
    outcome = env.checked(method, request, expect=False)
    assert outcome.code == code, outcome


def test_alpha_just_below_one_has_a_finite_explanation_and_is_refused_for_surveys(
    env: Env,
) -> None:
    # Fixed: the explanation's ratio comes from the exact (1+α)/(1−α). Surveys now cap ε
    # at MAX_SURVEY_EPSILON, so such a question is refused, naming the cap.
    explanation = RandomizedResponse(1 - 2**-53).explain()
    assert "over 99.5%" in explanation
    assert "at most 1.8e+16 times" in explanation
    assert "epsilon = 37.43" in explanation
    mechanism = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=1 - 2**-53))
    question = pb.Question(id="q", text="t", binary=pb.BinaryQuestion(), mechanism=mechanism)
    outcome = env.checked(
        "CreateSurvey", pb.CreateSurveyRequest(title="t", questions=[question]), expect=False
    )
    assert outcome.code == Code.INVALID_ARGUMENT, outcome
    assert f"is above the maximum {MAX_SURVEY_EPSILON!r}" in outcome.details


@pytest.mark.parametrize("index", range(4), ids=["laplace", "duchi", "piecewise", "hybrid"])
def test_confidence_just_below_one_is_refused_naming_it(env: Env, index: int) -> None:
    # Fixed (aggregator/_service.py): GetEstimate accepts 0 < confidence <= 1 - 1e-9.
    numeric = env.surveys["numeric"]
    request = pb.GetEstimateRequest(
        survey_id=numeric.id, question_id=numeric.questions[index].id, confidence=1 - 2**-53
    )
    outcome = env.checked("GetEstimate", request, None, expect=False)
    assert outcome.code == Code.INVALID_ARGUMENT, outcome
    assert outcome.details.startswith("confidence: must be in (0, 0.999999999]"), outcome
    assert "got 0.9999999999999999" in outcome.details


EXTREME: dict[str, tuple[Message, pb.Mechanism, str]] = {
    # A finite but wide range: one valid Laplace report at its clamp 2^43 put the mean's
    # x = lo + (hi - lo)(t + 1)/2 beyond the float range (now shared/mechanisms/_mean.py).
    "wide-range": (
        pb.NumericQuestion(min=-1e300, max=1e300),
        pb.Mechanism(laplace=pb.NumericLaplace(epsilon=1.0, grid_bits=10)),
        "questions[0].numeric.min: -1e+300 is beyond ±1e+15",
    ),
    # Epsilon about 1e-308: reports were +-1.8e308 and the mean overflowed the same way.
    "duchi-bound": (
        pb.NumericQuestion(min=0.0, max=40.0),
        pb.Mechanism(duchi=pb.Duchi(bound=1.7976931348623157e308)),
        "questions[0].mechanism: epsilon 1.112536929253601e-308 of duchi",
    ),
    # Epsilon about 1e-300: the debiased frequencies were not finite
    # (now shared/mechanisms/_frequency_estimate.py).
    "grr-alpha": (
        pb.CategoricalQuestion(options=["a", "b"]),
        pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=1e-300)),
        "questions[0].mechanism: epsilon 2.0000000000000004e-300 of grr",
    ),
    "olh-alpha": (
        pb.CategoricalQuestion(options=["a", "b"]),
        pb.Mechanism(olh=pb.OptimizedLocalHashing(g=2, alpha=5e-324)),
        "questions[0].mechanism: epsilon 1.5e-323 of olh",
    ),
    # Accepted, and estimated OK with infinite values.
    "rr-alpha": (
        pb.BinaryQuestion(),
        pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=5e-324)),
        "questions[0].mechanism: epsilon 1.5e-323 of randomized_response",
    ),
}


@pytest.mark.parametrize("case", sorted(EXTREME))
def test_extreme_mechanisms_are_refused_at_creation(env: Env, case: str) -> None:
    # Fixed (shared/questions: check_question): every mechanism's exact epsilon must be at
    # least 0.001 and a numeric range within +-1e15, so that every estimate stays finite.
    kind, mechanism, message = EXTREME[case]
    question = pb.Question(id="q", text="t", mechanism=mechanism)
    field = {pb.NumericQuestion: "numeric", pb.CategoricalQuestion: "categorical"}
    getattr(question, field.get(type(kind), "binary")).CopyFrom(kind)
    request = pb.CreateSurveyRequest(title="t", questions=[question])
    created = env.checked("CreateSurvey", request, expect=False)
    assert created.code == Code.INVALID_ARGUMENT, created
    assert created.details.startswith(message), created
