"""Property-based fuzzing of every Aggregator RPC against one real in-process server.

Every example checks the same invariants (``Env.checked``): the server answers within the
hang guard, with a status allowed for the RPC (never INTERNAL or UNKNOWN); a refused call
leaves the database exactly as it was (surveys, tallies, row counts of every table); a
valid call gets OK; and the server still answers a known-good call afterwards. The bugs
it found are fixed; test_fuzz_findings.py keeps a minimal case of each.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.shared.stats._intervals import MAX_CONFIDENCE
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server import _fuzz_strategies as fs
from tests.aggregator.server import _fuzz_wire as fw
from tests.aggregator.server._fuzz_batches import BINARY, batches, distinct, valid_request
from tests.aggregator.server._fuzz_env import (
    REQUEST,
    Code,
    Env,
    oversized,
    parse,
    start_env,
    stop_env,
    survey_request,
    targets_of,
)

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
QUESTION_ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
METHODS = ["clopper-pearson", "wilson", "wald"]
READ_ONLY = ("GetSurvey", "ListSurveys", "GetEstimate", "ExportReports")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """One server for the module (see ``start_env``)."""
    running = start_env(tmp_path_factory.mktemp("fuzz") / "aggregator.db")
    yield running
    stop_env(running)


def survey_ids(env: Env, *favoured: str) -> st.SearchStrategy[str]:
    """Mostly the fixture's surveys (``favoured`` ones more often), else any string."""
    names = sorted(env.surveys) + list(favoured)
    return fs.mostly(st.sampled_from(names).map(lambda name: env.surveys[name].id), fs.strings)


# --- CreateSurvey, GetSurvey, ListSurveys, CloseSurvey -----------------------------------


def certainly_invalid(request: pb.CreateSurveyRequest) -> bool:
    """Whether the spec breaks a documented rule (so it must be refused)."""
    ids = [q.id for q in request.questions]
    if not request.title.strip() or not request.questions or len(set(ids)) < len(ids):
        return True
    for question in request.questions:
        kind, mechanism = question.WhichOneof("kind"), question.mechanism.WhichOneof("kind")
        if not QUESTION_ID.fullmatch(question.id) or kind is None or mechanism is None:
            return True
        if mechanism not in fs.MECHANISMS_FOR[kind]:
            return True
        doubles = [
            v
            for _, v in getattr(question.mechanism, mechanism).ListFields()
            if isinstance(v, float)
        ]
        if kind == "numeric":
            doubles += [question.numeric.min, question.numeric.max]
            if not question.numeric.min < question.numeric.max:
                return True
        if kind == "categorical" and not 2 <= len(question.categorical.options) <= 1024:
            return True
        if not all(math.isfinite(d) for d in doubles):
            return True
    return False


@FUZZ
@given(data=st.data())
def test_create_survey(env: Env, data: st.DataObject) -> None:
    request = data.draw(fs.create_requests())
    count = len(env.known_ids())
    expect = False if certainly_invalid(request) else None
    outcome = env.checked("CreateSurvey", request, expect=expect)
    if outcome.code == Code.OK:
        survey = pb.Survey.FromString(outcome.response)
        assert len(env.known_ids()) == count + 1
        assert env.running.storage.get_survey(survey.id) == survey
        assert (survey.title, survey.reports) == (request.title.strip(), 0)
        assert [q.id for q in survey.questions] == [q.id for q in request.questions]
        for question in survey.questions:  # never a survey without privacy
            assert 0 < question.privacy.epsilon < math.inf, question
        usable(env, survey)


@FUZZ
@given(data=st.data())
def test_accepted_surveys_are_usable(env: Env, data: st.DataObject) -> None:
    request = data.draw(fs.create_requests(plausible=True))
    outcome = env.checked("CreateSurvey", request)
    if outcome.code == Code.OK:
        usable(env, pb.Survey.FromString(outcome.response))


def usable(env: Env, survey: pb.Survey) -> None:
    """An accepted survey takes valid reports of every question and estimates them."""
    targets = targets_of(survey, seed=len(survey.questions))
    tokens = [""] * 5
    if survey.enrollment_required:  # a token answers each question once
        issue = pb.IssueTokensRequest(survey_id=survey.id, count=5)
        outcome = env.checked("IssueTokens", issue, expect=True)
        tokens = list(pb.IssueTokensResponse.FromString(outcome.response).tokens)
    for i, token in enumerate(tokens):
        reports = [t.report(next(env.ids), i) for t in targets]
        submit = pb.SubmitReportsRequest(reports=reports, enrollment_token=token)
        env.checked("SubmitReports", submit, expect=True)
    for question in survey.questions:
        request = pb.GetEstimateRequest(survey_id=survey.id, question_id=question.id)
        outcome = env.checked("GetEstimate", request, None, expect=survey.min_reports <= 5)
        if outcome.code == Code.OK:
            assert pb.Estimate.FromString(outcome.response).n == 5


@settings(FUZZ, max_examples=80)
@given(data=st.data())
def test_get_list_and_close(env: Env, data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(["GetSurvey", "ListSurveys", "CloseSurvey", "Close"]))
    if method == "ListSurveys":  # with the admin token: as stored
        include = data.draw(st.booleans())
        outcome = env.checked(method, pb.ListSurveysRequest(include_closed=include), expect=True)
        listed = pb.ListSurveysResponse.FromString(outcome.response).surveys
        assert list(listed) == env.running.storage.list_surveys(include)
        if include:  # closed surveys only to the admin
            refused = env.checked(method, pb.ListSurveysRequest(include_closed=True), None)
            assert refused.code == Code.UNAUTHENTICATED
    elif method == "GetSurvey":
        survey_id = data.draw(survey_ids(env))
        exists = survey_id in env.known_ids()
        outcome = env.checked(method, pb.GetSurveyRequest(survey_id=survey_id), expect=exists)
        if exists:
            assert pb.Survey.FromString(outcome.response) == env.running.storage.get_survey(
                survey_id
            )
    elif method == "CloseSurvey":  # an unknown or the closed survey: a no-op either way
        closed = env.surveys["closed"].id
        survey_id = data.draw(st.one_of(st.just(closed), fs.strings))
        before = env.fingerprint()
        request = pb.CloseSurveyRequest(survey_id=survey_id)
        env.checked(method, request, expect=survey_id == closed)
        assert env.fingerprint() == before
    else:  # a new survey, closed
        created = env.call("CreateSurvey", survey_request("Short", [("binary", BINARY)]))
        survey = pb.Survey.FromString(created.response)
        request = pb.CloseSurveyRequest(survey_id=survey.id)
        outcome = env.checked("CloseSurvey", request, expect=True)
        assert pb.Survey.FromString(outcome.response).state == pb.SURVEY_STATE_CLOSED
        stored = env.running.storage.get_survey(survey.id)
        assert stored is not None
        assert stored.state == pb.SURVEY_STATE_CLOSED


# --- SubmitReports -------------------------------------------------------------------------


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_submit_reports(env: Env, data: st.DataObject) -> None:
    batch = data.draw(batches(env))
    expect = False if batch.refused else (None if batch.unsure else True)
    request = pb.SubmitReportsRequest(reports=batch.reports, enrollment_token=batch.token)
    before = env.tallies()
    outcome = env.checked("SubmitReports", request, expect=expect)
    if outcome.code == Code.OK:  # each new report is stored once, a resent one not again
        response = pb.SubmitReportsResponse.FromString(outcome.response)
        unique = distinct(batch.reports)
        new = [r for r in unique.values() if r.report_id not in env.stored]
        assert response.stored == len(new)
        assert response.already_stored == len(batch.reports) - len(new)
        assert env.tallies() - before == Counter((r.survey_id, r.question_id) for r in new)
        return
    # A refused batch claimed nothing: its valid reports are all stored when sent alone.
    good = list(distinct(batch.good).values())
    if good:
        assert env.submit(good).stored == len(good)
        assert env.tallies() - before == Counter((r.survey_id, r.question_id) for r in good)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_a_batch_refused_in_storage_claims_nothing(env: Env, data: st.DataObject) -> None:
    """A stored id with other content is found by the storage: the rest stays unclaimed."""
    targets = data.draw(st.lists(st.sampled_from(env.targets["open"]), min_size=1, max_size=8))
    good = [t.report(next(env.ids), data.draw(st.integers(0, 39))) for t in targets]
    stored = env.stored[data.draw(st.sampled_from(sorted(env.stored)))]
    target = next(
        t
        for t in env.targets["open"]
        if t.question.id == stored.question_id and t.survey_id == stored.survey_id
    )
    conflict = next(
        target.report(stored.report_id, i)
        for i in range(40)
        if target.report(stored.report_id, i) != stored
    )
    reports = [*good]
    reports.insert(data.draw(st.integers(0, len(good))), conflict)
    before = env.tallies()
    refused = env.checked("SubmitReports", pb.SubmitReportsRequest(reports=reports), expect=False)
    assert refused.code == Code.ALREADY_EXISTS, refused
    assert env.submit(good).stored == len(good)  # none of them was left claimed
    assert env.tallies() - before == Counter((r.survey_id, r.question_id) for r in good)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_valid_batches_are_stored_once(env: Env, data: st.DataObject) -> None:
    targets = data.draw(st.lists(st.sampled_from(env.targets["open"]), min_size=1, max_size=30))
    reports = [t.report(next(env.ids), data.draw(st.integers(0, 39))) for t in targets]
    reports += data.draw(st.lists(st.sampled_from(reports), max_size=3))  # identical repeats
    before = env.tallies()
    outcome = env.checked("SubmitReports", pb.SubmitReportsRequest(reports=reports), expect=True)
    response = pb.SubmitReportsResponse.FromString(outcome.response)
    unique = distinct(reports)
    assert (response.stored, response.already_stored) == (len(unique), len(reports) - len(unique))
    assert env.tallies() - before == Counter((r.survey_id, r.question_id) for r in unique.values())
    state = env.fingerprint()  # a resend is acknowledged and changes nothing
    again = env.checked("SubmitReports", pb.SubmitReportsRequest(reports=reports), expect=True)
    assert pb.SubmitReportsResponse.FromString(again.response).stored == 0
    assert env.fingerprint() == state


@pytest.mark.parametrize("uniform", [True, False], ids=["yes-no", "mixed"])
def test_batches_over_the_limit_store_nothing(env: Env, uniform: bool) -> None:
    targets = env.targets["open"][:1] if uniform else env.targets["open"]
    reports = [targets[i % len(targets)].report(next(env.ids), i) for i in range(10_001)]
    env.checked("SubmitReports", pb.SubmitReportsRequest(reports=reports), expect=False)
    env.checked("SubmitReports", pb.SubmitReportsRequest(reports=reports[:10_000]), expect=True)


# --- GetEstimate, IssueTokens --------------------------------------------------------------


@settings(FUZZ, max_examples=100)
@given(data=st.data())
def test_get_estimate(env: Env, data: st.DataObject) -> None:
    survey_id = data.draw(survey_ids(env, "gated", "closed", "enrolled"))
    survey = env.running.storage.get_survey(survey_id)
    qids = st.sampled_from([q.id for q in survey.questions]) if survey else fs.strings
    question_id = data.draw(fs.mostly(qids, fs.strings))
    in_range = st.one_of(
        st.sampled_from([0.0, MAX_CONFIDENCE]),
        st.floats(0, MAX_CONFIDENCE, exclude_min=True),
    )
    confidence = data.draw(fs.mostly(in_range, fs.doubles))
    method = data.draw(fs.mostly(st.sampled_from(["", *METHODS]), fs.strings))
    tally = env.running.storage.tally(survey_id, question_id)
    enough = survey is not None and tally is not None and tally.n >= max(1, survey.min_reports)
    valid = enough and (confidence == 0 or 0 < confidence <= MAX_CONFIDENCE)
    valid = valid and method in ("", *METHODS)
    request = pb.GetEstimateRequest(
        survey_id=survey_id, question_id=question_id, confidence=confidence, method=method
    )
    outcome = env.checked(
        "GetEstimate", request, None, expect=valid if valid or not enough else None
    )
    if outcome.code == Code.OK:
        estimate = pb.Estimate.FromString(outcome.response)
        assert (estimate.survey_id, estimate.question_id) == (survey_id, question_id)
        assert tally is not None
        assert estimate.n == tally.n


@settings(FUZZ, max_examples=60)
@given(data=st.data())
def test_issue_tokens(env: Env, data: st.DataObject) -> None:
    survey_id = data.draw(survey_ids(env, "enrolled", "enrolled"))
    count = data.draw(st.one_of(st.sampled_from([0, 1, 100_001, 2**32 - 1]), st.integers(1, 20)))
    survey = env.running.storage.get_survey(survey_id)
    invalid = survey is None or not 1 <= count <= 100_000
    request = pb.IssueTokensRequest(survey_id=survey_id, count=count)
    outcome = env.checked("IssueTokens", request, expect=False if invalid else None)
    if outcome.code == Code.OK:
        response = pb.IssueTokensResponse.FromString(outcome.response)
        assert response.survey_id == survey_id
        assert len(set(response.tokens)) == len(response.tokens) == count
        after = env.running.storage.get_survey(survey_id)
        assert survey is not None
        assert after is not None
        assert after.tokens_issued == survey.tokens_issued + count


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_enrollment_tokens_answer_once(env: Env, data: st.DataObject) -> None:
    enrolled = env.surveys["enrolled"]
    issue = pb.IssueTokensRequest(survey_id=enrolled.id, count=2)
    used, spare = pb.IssueTokensResponse.FromString(
        env.checked("IssueTokens", issue, expect=True).response
    ).tokens
    target = env.targets["enrolled"][0]
    first = target.report(next(env.ids), data.draw(st.integers(0, 39)))
    env.submit([first], token=used)
    kind = data.draw(st.sampled_from(["spare", "used", "resend", "random", "none"]))
    token = {"spare": spare, "used": used, "resend": used, "none": ""}.get(kind, "")
    if kind == "random":
        token = data.draw(fs.strings.filter(lambda t: t not in (used, spare)))
    report = first if kind == "resend" else target.report(next(env.ids), data.draw(st.integers()))
    request = pb.SubmitReportsRequest(reports=[report], enrollment_token=token)
    outcome = env.checked("SubmitReports", request, expect=kind in ("spare", "resend"))
    if kind == "resend":  # acknowledged again, counted once
        assert pb.SubmitReportsResponse.FromString(outcome.response).stored == 0


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_export_reports(env: Env, data: st.DataObject) -> None:
    survey_id = data.draw(survey_ids(env, "closed", "enrolled"))
    survey = env.running.storage.get_survey(survey_id)
    request = pb.ExportReportsRequest(survey_id=survey_id)
    outcome = env.checked("ExportReports", request, expect=survey is not None)
    if survey is not None:  # every stored report once, as the log holds it
        reports = pb.ExportReportsResponse.FromString(outcome.response).reports
        assert len({r.report_id for r in reports}) == len(reports) == survey.reports
        assert all(r.survey_id == survey_id for r in reports)
        for report in reports:
            if report.report_id in env.stored:  # a seed report: exactly as submitted
                assert report == env.stored[report.report_id]
    else:
        assert outcome.code == Code.NOT_FOUND, outcome


# --- authorization -------------------------------------------------------------------------


@settings(FUZZ, max_examples=80)
@given(data=st.data())
def test_admin_calls_without_the_token_change_nothing(env: Env, data: st.DataObject) -> None:
    metadata = data.draw(fw.bad_metadata())
    admin = ["CreateSurvey", "CloseSurvey", "IssueTokens", "ExportReports"]
    method = data.draw(st.sampled_from([*admin, "GetSurvey"]))
    request: Message = {
        "CreateSurvey": survey_request("Valid", [("binary", BINARY)]),
        "CloseSurvey": pb.CloseSurveyRequest(survey_id=env.surveys["yesno"].id),  # open
        "IssueTokens": pb.IssueTokensRequest(survey_id=env.surveys["enrolled"].id, count=2),
        "ExportReports": pb.ExportReportsRequest(survey_id=env.surveys["yesno"].id),
        "GetSurvey": pb.GetSurveyRequest(survey_id=env.surveys["yesno"].id),  # anyone may
    }[method]
    too_big = oversized(metadata)
    anyone = method == "GetSurvey"
    outcome = env.checked(method, request, metadata, expect=None if anyone and too_big else anyone)
    if not anyone:  # a header over gRPC's metadata size limit may be refused before the check
        allowed = {Code.UNAUTHENTICATED, *([Code.RESOURCE_EXHAUSTED] if too_big else [])}
        assert outcome.code in allowed, outcome


# --- raw bytes on the wire -----------------------------------------------------------------


@settings(FUZZ, max_examples=250)
@given(data=st.data())
def test_raw_bytes(env: Env, data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(REQUEST)))
    base = valid_request(env, method, data).SerializeToString()
    wire = data.draw(st.one_of(st.binary(max_size=300), fw.mutated(base)), label="bytes")
    parsed = parse(method, wire)
    before, count = env.fingerprint(), env.reports()
    outcome = env.checked(method, wire, expect=False if parsed is None else None)
    if parsed is None:
        assert outcome.code == Code.INVALID_ARGUMENT, outcome
    elif method in READ_ONLY:  # bytes that parse are answered as their canonical form is
        assert env.call(method, parsed).code == outcome.code
    elif method == "SubmitReports" and outcome.code == Code.OK:
        response = pb.SubmitReportsResponse.FromString(outcome.response)
        assert response.stored + response.already_stored == len(parsed.reports)
        assert env.reports() - count == response.stored
    elif method == "CloseSurvey" and parsed.survey_id == env.surveys["closed"].id:
        assert env.fingerprint() == before
