"""Multi-select questions through a real in-process server on 127.0.0.1:0."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest

from deniable.client._remote import AggregatorClient
from deniable.shared.mechanisms import ItemRandomizedResponse, Tally, mechanism_of
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server.test_grpc_kinds import rejected, reports_for
from tests.conftest import binary_question

Code = grpc.StatusCode
ITEMS = ["apples", "pears", "plums", "kiwis"]
SPEC = ItemRandomizedResponse.from_epsilon(4, 2.0)


def fruit(qid: str = "fruit", items: list[str] | None = None) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Which did you buy?",
        multi_select=pb.MultiSelectQuestion(items=ITEMS if items is None else items),
        mechanism=SPEC.to_message(),
    )


@pytest.fixture
def survey(admin: AggregatorClient) -> pb.Survey:
    return admin.create_survey("Shopping", [fruit(), binary_question("late")])


def test_the_daemon_estimates_items_pairs_and_a_conditional_share_as_the_library(
    anonymous: AggregatorClient, survey: pb.Survey
) -> None:
    stored = survey.questions[0]
    assert mechanism_of(stored) == SPEC
    assert stored.privacy.epsilon == SPEC.epsilon
    assert stored.privacy.explanation == SPEC.explain()
    rng = np.random.default_rng(5)
    truths = rng.integers(0, 16, size=800)
    reports = SPEC.perturb_many(truths, rng)
    values = SPEC.encode(reports)
    assert anonymous.submit_reports(reports_for(survey, "fruit", values)).stored == 800
    got = anonymous.get_estimate(survey.id, "fruit", 0.9, given="Pears", item="kiwis")
    tally = Tally(800, tuple(SPEC.tally(reports)))
    want = SPEC.estimate_items(tally, 0.9)
    assert (got.n, got.mechanism, got.epsilon) == (800, "item_rr", SPEC.epsilon)
    assert [i.option for i in got.items] == ITEMS
    assert [i.support for i in got.items] == list(want.item_counts)
    assert [i.estimate_raw for i in got.items] == list(want.estimate_raw)
    assert [(i.ci_low, i.ci_high) for i in got.items] == list(
        zip(want.ci_low, want.ci_high, strict=True)
    )
    assert len(got.pairs) == 6
    first = got.pairs[0]
    assert (first.first, first.second) == ("apples", "pears")
    assert first.support == int((reports[:, 0] & reports[:, 1]).sum())
    assert first.estimate_raw == want.pair_estimate_raw[0][1]
    assert (first.ci_low, first.ci_high) == (want.pair_ci_low[0][1], want.pair_ci_high[0][1])
    share = SPEC.conditional(tally, 1, 3, 0.9)
    assert (got.conditional.given, got.conditional.item) == ("pears", "kiwis")
    assert got.conditional.estimate_raw == share.estimate_raw
    assert (got.conditional.ci_low, got.conditional.ci_high) == (share.ci_low, share.ci_high)
    assert got.conditional.defined
    assert not got.options  # the multiple-choice field stays empty
    plain = anonymous.get_estimate(survey.id, "fruit")
    assert not plain.HasField("conditional")


@pytest.mark.parametrize(
    ("qid", "given", "item", "message"),
    [
        ("fruit", "figs", "pears", "given: 'figs' is not an item of question 'fruit'"),
        ("fruit", "pears", "", "item: missing (give both given and item, or neither)"),
        ("fruit", "", "pears", "given: missing"),
        ("fruit", "pears", "PEARS", "item: 'PEARS' is the given item; name another one"),
        ("late", "pears", "kiwis", "a conditional share applies only to multi-select"),
    ],
)
def test_a_bad_conditional_request_is_invalid_argument(
    anonymous: AggregatorClient, survey: pb.Survey, qid: str, given: str, item: str, message: str
) -> None:
    values: list[dict[str, Any]] = [{"bits": b"\x05"}]
    if qid == "late":
        values = [{"bit": True}]
    anonymous.submit_reports(reports_for(survey, qid, values))
    error = rejected(lambda: anonymous.get_estimate(survey.id, qid, given=given, item=item))
    assert error.status == Code.INVALID_ARGUMENT
    assert message in error.details


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ({"bits": b"\x01\x00"}, "reports[1].bits", "must be 1 bytes for k=4"),
        ({"bits": b"\x10"}, "reports[1].bits", "has padding bits set beyond k=4"),
        ({"option_fixed": 1}, "reports[0].bits", "missing (item_rr reports carry bits)"),
    ],
)
def test_bad_reports_reject_the_batch_and_store_nothing(
    anonymous: AggregatorClient, survey: pb.Survey, value: dict[str, Any], field: str,
    message: str,
) -> None:  # fmt: skip
    bad = reports_for(survey, "fruit", [{"bits": b"\x03"}, value])
    if "missing" in message:
        bad = bad[1:]
    error = rejected(lambda: anonymous.submit_reports(bad))
    assert error.status == Code.INVALID_ARGUMENT
    assert f"{field}: {message}" in error.details
    assert anonymous.get_survey(survey.id).reports == 0


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (fruit(items=["apples"]), "multi_select.items: need 2..64 items, got 1"),
        (fruit(items=["a", "A"]), "multi_select.items[1]: duplicate item 'A'"),
        (fruit(items=["a", "none"]), "multi_select.items[1]: 'none' is reserved"),
        (
            pb.Question(id="q", text="t", multi_select=pb.MultiSelectQuestion(items=ITEMS),
                        mechanism=pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25))),
            "mechanism: oue does not apply to a multi_select question (expected item_rr)",
        ),
        (
            pb.Question(id="q", text="t", multi_select=pb.MultiSelectQuestion(items=ITEMS),
                        mechanism=pb.Mechanism(item_rr=pb.ItemRandomizedResponse(q=0.5))),
            "mechanism.item_rr.q: q must be strictly between 0 and 1/2, got 0.5",
        ),
    ],
)  # fmt: skip
def test_invalid_multi_select_questions_are_refused(
    admin: AggregatorClient, question: pb.Question, message: str
) -> None:
    error = rejected(lambda: admin.create_survey("Bad", [question]))
    assert error.status == Code.INVALID_ARGUMENT
    assert message in error.details
    assert admin.list_surveys(include_closed=True) == []
