"""Attacks on the participant's budget and memo by an aggregator asking again under new names."""

# The adversary is the aggregator's operator (or several colluding operators). It controls
# the names the participant reaches it by and the surveys it serves, and it wants two
# independent draws of one true answer, which average towards the truth. Each attack
# answers through the installed ``deniable`` as a participant would, and checks what the
# aggregator receives. On a device that keeps a budget and a memo per aggregator name,
# every one of them succeeds.

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from deniable.client._remote import AggregatorClient
from deniable.shared.questions import numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.client._recording import open_survey, recording_aggregator
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, binary_question


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon: the test creates its own survey (tests/conftest.py)."""
    return shared_daemon


EPS_HALF = math.log(3)  # randomized response at alpha = 0.5


def _salary(qid: str) -> pb.Question:
    """A numeric question: two independent draws are never equal."""
    return pb.Question(
        id=qid,
        text="Your yearly salary, in thousands?",
        numeric=pb.NumericQuestion(min=0, max=200),
        mechanism=numeric_mechanism("laplace", 0.0, 200.0, 1.0).to_message(),
    )


def _value(report: pb.Report) -> object:
    """The report's randomized value, whatever its kind."""
    field = report.WhichOneof("value")
    assert field is not None
    return getattr(report, field)


def _answer(run_cli: RunCli, server: str, survey_id: str, *answers: str) -> Any:
    args = [arg for answer in answers for arg in ("--answer", answer)]
    done = run_cli("deniable", "answer", "--server", server, survey_id, "--yes", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_three_names_of_one_aggregator_get_one_report_per_question(
    daemon: Daemon, run_cli: RunCli
) -> None:
    port = daemon.address.rsplit(":", 1)[1]
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        survey_id = admin.create_survey("Names", [binary_question("q1"), _salary("pay")]).id
    names = [f"127.0.0.1:{port}", f"localhost:{port}", f"ipv4:127.0.0.1:{port},127.0.0.1:9"]
    for name in names:
        _answer(run_cli, name, survey_id, "q1=yes", "pay=80")
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        stored = [r for batch in admin.export_reports(survey_id) for r in batch.reports]
    # One report per question: the same reports, stored once; not three fresh draws.
    assert sorted(r.question_id for r in stored) == ["pay", "q1"]
    budget = json.loads(run_cli("deniable", "budget", "--json").stdout)
    epsilon = EPS_HALF + 1.0
    assert math.isclose(budget["device"]["spent"], epsilon, rel_tol=1e-12)
    assert all(math.isclose(row["spent"], epsilon) for row in budget["aggregators"])
    assert len(budget["aggregators"]) == 3  # each name received it: each shows it


def test_the_same_question_at_another_aggregator_gets_the_kept_value(run_cli: RunCli) -> None:
    first = open_survey("first", binary_question("q1"), _salary("pay"))
    # The other aggregator words it with other ids, spacing and case: the same question.
    again = _salary("income")
    again.text = "  your YEARLY salary,\tin thousands? "
    second = open_survey("second", again)
    with recording_aggregator([first]) as (one, a), recording_aggregator([second]) as (two, b):
        _answer(run_cli, a, "first", "q1=yes", "pay=80")
        shown = _answer(run_cli, b, "second", "income=20")
        (sent_first,) = one.submitted()
        (sent_second,) = two.submitted()
    kept = next(r for r in sent_first.reports if r.question_id == "pay")
    (copy,) = sent_second.reports
    assert copy.WhichOneof("value") == kept.WhichOneof("value")
    assert _value(copy) == _value(kept)
    assert (copy.survey_id, copy.question_id) == ("second", "income")
    assert copy.report_id != kept.report_id  # no id links the two aggregators' reports
    assert shown["privacy"]["cost"] == 0.0  # no new draw: nothing new to pay for
    assert shown["privacy"]["aggregator_cost"] == 1.0  # but the second aggregator learns it


def test_a_question_repeated_within_a_survey_gets_one_draw(run_cli: RunCli) -> None:
    survey = open_survey("twice", _salary("pay"), _salary("pay_again"))
    with recording_aggregator([survey]) as (recorder, address):
        document = _answer(run_cli, address, "twice", "pay=80", "pay_again=80")
        (sent,) = recorder.submitted()
    values = {r.question_id: _value(r) for r in sent.reports}
    assert values["pay"] == values["pay_again"]
    assert document["privacy"]["cost"] == 1.0


def test_the_budget_is_the_devices_over_every_aggregator(run_cli: RunCli) -> None:
    one = open_survey("one", binary_question("q1"))
    other = binary_question("q1")
    other.text = "Did you copy?"
    two = open_survey("two", other)
    with recording_aggregator([one]) as (_, a), recording_aggregator([two]) as (second, b):
        _answer(run_cli, a, "one", "q1=yes", *())
        done = run_cli("deniable", "answer", "--server", b, "two", "--yes", "--answer",
                       "q1=no", "--budget", "1.5")  # fmt: skip
        assert second.submitted() == []
    assert done.returncode == 5, done.stderr
    assert "left on this device, over every aggregator" in done.stderr


def test_a_survey_other_than_the_one_asked_for_is_refused(run_cli: RunCli) -> None:
    survey = open_survey("other", binary_question("q1"))
    with recording_aggregator([survey]) as (recorder, address):
        recorder.surveys["asked"] = survey  # asked for "asked", it answers with "other"
        done = run_cli("deniable", "answer", "--server", address, "asked", "--yes",
                       "--answer", "q1=yes")  # fmt: skip
        assert recorder.submitted() == []
    assert done.returncode == 5, done.stderr
    assert "asked for survey asked, the aggregator sent survey 'other'" in done.stderr
