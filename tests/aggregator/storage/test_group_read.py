"""A commit reads each question's values of all its batches at once; a bad value refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.storage import Submission, SubmitOutcome
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite._group_read import read_groups
from deniable.shared.errors import InvalidArgument
from deniable.shared.questions import question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb


@pytest.fixture
def service(tmp_path: Path) -> AggregatorService:
    return AggregatorService(SqliteStorage(str(tmp_path / "x.db")))


def _survey(service: AggregatorService) -> pb.Survey:
    grr = question_type("categorical").question_for(
        question_type("categorical").build("grr", 4, epsilon=1.0)
    )
    grr.id, grr.text = "commute", "How?"
    duchi = question_type("numeric").question_for(
        question_type("numeric").build("duchi", 0.0, 10.0, epsilon=1.0)
    )
    duchi.id, duchi.text = "hours", "How long?"
    return service.create_survey(pb.CreateSurveyRequest(title="T", questions=[grr, duchi]))


def _batch(
    service: AggregatorService,
    survey: pb.Survey,
    prefix: str,
    options: list[int],
    numbers: list[float],
) -> Submission:
    grr, duchi = survey.questions
    reports = [
        pb.Report(report_id=f"{prefix}o{i}", survey_id=survey.id, question_id=grr.id,
                  mechanism=grr.mechanism, option_fixed=option)
        for i, option in enumerate(options)
    ] + [
        pb.Report(report_id=f"{prefix}n{i}", survey_id=survey.id, question_id=duchi.id,
                  mechanism=duchi.mechanism, number=number)
        for i, number in enumerate(numbers)
    ]  # fmt: skip
    data = pb.SubmitReportsRequest(reports=reports).SerializeToString()
    return service.prepare_reports(data).submission


def test_the_groups_of_many_batches_are_read_together(service: AggregatorService) -> None:
    survey = _survey(service)
    bound = service._mechanism(survey.id, survey.questions[1]).bound  # type: ignore[attr-defined]
    batches = [
        _batch(service, survey, f"b{b}", [b % 4, (b + 1) % 4], [bound, -bound]) for b in range(5)
    ]
    assert all(g.unread is not None for batch in batches for g in batch.groups)
    read, refused = read_groups(batches)
    assert refused == {}
    assert sorted(read) == [(b, g) for b in range(5) for g in range(2)]
    for (b, g), reports in read.items():
        group = batches[b].groups[g]
        assert group.mechanism is not None
        assert len(reports) == 2
        assert group.mechanism.tally(reports) == group.mechanism.tally(
            group.mechanism.read(group.unread.field, group.unread.values)  # type: ignore[union-attr]
        )
    storage = service.storage
    assert isinstance(storage, SqliteStorage)
    with storage._lock:
        outcomes = storage._commit_locked(batches)
    assert outcomes == [SubmitOutcome(4, 0)] * 5
    estimate = service.get_estimate(
        pb.GetEstimateRequest(survey_id=survey.id, question_id="commute")
    )
    assert estimate.n == 10


def test_a_bad_value_refuses_its_batch_alone_naming_it(service: AggregatorService) -> None:
    survey = _survey(service)
    bound = service._mechanism(survey.id, survey.questions[1]).bound  # type: ignore[attr-defined]
    good = _batch(service, survey, "a", [0, 1], [bound])
    bad_option = _batch(service, survey, "b", [2, 9], [bound])  # option 9 of 4
    bad_number = _batch(service, survey, "c", [3], [bound, 0.5])  # not a Duchi report
    after = _batch(service, survey, "d", [1], [-bound])
    storage = service.storage
    assert isinstance(storage, SqliteStorage)
    with storage._lock:
        outcomes = storage._commit_locked([good, bad_option, bad_number, after])
    assert outcomes[0] == SubmitOutcome(3, 0)
    assert isinstance(outcomes[1], InvalidArgument)
    assert str(outcomes[1]).startswith("reports[1].option_fixed: ")
    assert isinstance(outcomes[2], InvalidArgument)
    assert str(outcomes[2]).startswith("reports[2].number: 0.5 is not a possible duchi report")
    assert outcomes[3] == SubmitOutcome(2, 0)
    for question, n in (("commute", 3), ("hours", 2)):
        request = pb.GetEstimateRequest(survey_id=survey.id, question_id=question)
        assert service.get_estimate(request).n == n
