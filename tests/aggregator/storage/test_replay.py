"""One replay of a group of reports against its question, for ingest, check and migrate."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.aggregator.storage import Asked, StoredSurvey, replay_group
from deniable.aggregator.storage.codec import DecodedBatch, decode_batch, decode_row
from deniable.shared.errors import FailedPrecondition, InvalidArgument
from deniable.shared.mechanisms import mechanism_of
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

QUESTION = binary_question("q1", 0.5)
SURVEY = pb.Survey(id="s1", questions=[QUESTION], max_reports=50)
ASKED = Asked("s1", QUESTION, mechanism_of(QUESTION), ReleaseSteps.of(10, 5), 50)


def report(
    rid: str, *, bit: bool = True, alpha: float = 0.5, survey: str = "s1", question: str = "q1"
) -> pb.Report:
    sent = pb.Report(report_id=rid, survey_id=survey, question_id=question, bit=bit)
    sent.mechanism.randomized_response.alpha = alpha
    return sent


def batch(*reports: pb.Report) -> DecodedBatch:
    return decode_batch(pb.SubmitReportsRequest(reports=reports).SerializeToString(), 100)


def test_a_fitting_group_is_read_and_tallied_by_its_mechanism() -> None:
    decoded = batch(report("a"), report("b", bit=False), report("c"))
    (group,) = decoded.groups
    replayed = replay_group(group, decoded.positions, ASKED)
    assert (replayed.survey_id, replayed.question_id) == ("s1", "q1")
    assert replayed.tally(slice(None)) == [2]
    assert replayed.tally(np.array([False, True, True])) == [1]
    assert replayed.mechanism is ASKED.mechanism
    assert replayed.releases == ReleaseSteps.of(10, 5)
    assert replayed.max_reports == 50
    assert replayed.unread is None


def test_an_unread_group_leaves_its_values_to_the_storage() -> None:
    decoded = batch(report("a"), report("b", bit=False))
    (group,) = decoded.groups
    replayed = replay_group(group, decoded.positions, ASKED, unread=True)
    assert replayed.unread is not None
    assert replayed.unread.field == "bit"
    assert replayed.unread.values.tolist() == [1, 0]
    assert replayed.reports is None
    with pytest.raises(AssertionError):
        replayed.tally(slice(None))


def test_another_mechanism_or_a_value_it_refuses_is_named() -> None:
    decoded = batch(report("a"), report("b", alpha=0.9))
    with pytest.raises(FailedPrecondition, match=r"^reports\[1\]\.mechanism: .* differs from"):
        replay_group(decoded.groups[1], decoded.positions, ASKED)
    refused = report("b")
    refused.option = 3  # a multiple-choice value: no bit
    decoded = batch(report("a"), refused)
    with pytest.raises(InvalidArgument, match=r"^reports\[1\]\.bit: missing"):
        replay_group(decoded.groups[1], decoded.positions, ASKED)


def test_a_stored_row_replays_against_its_own_survey_only() -> None:
    stored = StoredSurvey(SURVEY)
    row = pb.SubmitReportsRequest(reports=[report("a"), report("b")]).SerializeToString()
    (group,) = stored.groups(decode_row(row))
    assert group.tally(slice(None)) == [2]
    assert group.max_reports == 0  # a copy does not check the source's cap again
    other = batch(report("x", survey="s2"))
    with pytest.raises(ValueError, match=r"reports\[0\]\.survey_id: 's2' in this survey's log"):
        stored.groups(other)
    unknown = batch(report("x", question="q9"))
    with pytest.raises(ValueError, match=r"reports\[0\]\.question_id: no question 'q9'"):
        stored.groups(unknown)
