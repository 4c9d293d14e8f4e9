"""Attack: a survey created with max_reports is sent more reports than that.

Against the code before the fix the survey had no cap (the field did not exist and the
daemon dropped it), so every batch was stored; now a batch that would pass it is
refused whole, decided in the commit, so concurrent submitters cannot overshoot.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question


def batch(survey: pb.Survey, prefix: str, count: int) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(report_id=f"{prefix}-{i}", survey_id=survey.id, question_id=question.id,
                  mechanism=question.mechanism, bit=i % 2 == 0)
        for i in range(count)
    ]  # fmt: skip


def test_a_survey_never_stores_more_than_max_reports(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Capped", [binary_question("q")], max_reports=100)
    first = batch(survey, "a", 60)
    assert anonymous.submit_reports(first).stored == 60
    with pytest.raises(RemoteError) as refused:
        anonymous.submit_reports(batch(survey, "b", 60))
    assert refused.value.status == grpc.StatusCode.FAILED_PRECONDITION
    assert refused.value.details == (
        f"reports[0]: survey {survey.id!r} is full: its 60 new report(s) in this batch "
        "would take it past its max_reports of 100; nothing stored"
    )
    assert admin.get_survey(survey.id).reports == 60
    resent = anonymous.submit_reports(first)  # a resend is still acknowledged
    assert (resent.stored, resent.already_stored) == (0, 60)
    assert admin.get_survey(survey.id).max_reports == 100


def test_concurrent_submitters_cannot_overshoot_max_reports(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = admin.create_survey("Capped", [binary_question("q")], max_reports=100)

    def send(k: int) -> int | str:
        try:
            return anonymous.submit_reports(batch(survey, f"t{k}", 9)).stored
        except RemoteError as error:
            return error.code

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(send, range(30)))
    assert {o for o in outcomes if isinstance(o, str)} == {"FAILED_PRECONDITION"}
    stored = sum(o for o in outcomes if isinstance(o, int))
    assert stored == admin.get_survey(survey.id).reports == 99  # 11 batches of 9
    assert anonymous.get_estimate(survey.id, "q").n == 99
