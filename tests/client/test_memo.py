"""The memo: one report per question, drawn once and kept; no true answer stored; fails closed."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from deniable.client._answer import Answer
from deniable.client._errors import RefusedError
from deniable.client._files import LocalStateError
from deniable.client._guard import LocalState, Plan
from deniable.client._ledger import Charge, Ledger, save_ledger
from deniable.client._memo import Kept, Memo, definition_of, load_memo
from deniable.client._policy import Policy
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question


def _categorical(options: list[str], qid: str = "os") -> pb.Question:
    return pb.Question(
        id=qid,
        text="Which?",
        categorical=pb.CategoricalQuestion(options=options),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
    )


def _numeric(lo: float = 0.0, hi: float = 100.0) -> pb.Question:
    return pb.Question(
        id="hours",
        text="How many?",
        numeric=pb.NumericQuestion(min=lo, max=hi),
        mechanism=pb.Mechanism(duchi=pb.Duchi(bound=3.0)),
    )


def _survey(*questions: pb.Question) -> pb.Survey:
    return pb.Survey(id="s", state=pb.SURVEY_STATE_OPEN, questions=questions)


def _answer(
    state: LocalState, survey: pb.Survey, answers: dict[str, Answer], *, send: bool = True
) -> Plan:
    """What ``deniable answer`` does: plan, keep; if sent: charge and mark as stored."""
    specs = {q.id: Policy().check(q) for q in survey.questions}
    with state.session(write=True) as session:
        plan = session.plan("h:1", survey, specs, answers)
        session.keep(plan, survey)
        if send:
            session.commit(plan)
            session.mark_sent(plan)
    return plan


def test_the_definition_counts_kind_options_range_and_mechanism_not_text() -> None:
    question = binary_question("q", 0.5)
    reworded = binary_question("q", 0.5)
    reworded.text, reworded.privacy.epsilon = "Reworded?", 0.01
    assert definition_of(reworded) == definition_of(question)
    others = [
        binary_question("r", 0.5),
        binary_question("q", 0.25),
        _categorical(["a", "b"], "q"),
    ]
    assert len({definition_of(q) for q in [question, *others]}) == 4
    assert definition_of(_categorical(["a", "b"])) != definition_of(_categorical(["b", "a"]))
    assert definition_of(_numeric(0, 100)) != definition_of(_numeric(0, 101))


def test_a_question_is_drawn_once_whatever_the_later_answers(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    survey = _survey(binary_question("q"))
    declined = _answer(state, survey, {"q": True}, send=False)  # shown, then declined
    assert state.read_ledger().charges == ()  # kept but not charged
    plans = [declined] + [_answer(state, survey, {"q": a}) for a in (False, True, False)]
    reports = [plan.prepared[0] for plan in plans]
    assert len({item.report.SerializeToString() for item in reports}) == 1  # never re-rolled
    assert [item.reused for item in reports] == [False, True, True, True]
    epsilon = reports[0].mechanism.epsilon
    assert [item.cost for item in reports] == [epsilon, epsilon, 0.0, 0.0]  # charged when sent
    ledger = state.read_ledger()
    assert [c.report_id for c in ledger.charges] == [reports[0].report.report_id]  # once
    assert not plans[1].sent  # acknowledged only after the second run's send
    assert plans[2].sent


def test_a_dry_run_keeps_what_it_shows(tmp_path: Path) -> None:
    state = LocalState(tmp_path / "data")
    survey = _survey(binary_question("q"))
    specs = {"q": Policy().check(survey.questions[0])}
    with state.session(write=False) as session:
        session.plan("h:1", survey, specs, {"q": True})
        with pytest.raises(RuntimeError, match="needs a session opened with write=True"):
            session.keep(session.plan("h:1", survey, specs, {"q": True}), survey)
    assert not state.directory.exists()  # a read-only session creates nothing
    shown = _answer(state, survey, {"q": True}, send=False).prepared[0].report
    assert _answer(state, survey, {"q": False}).prepared[0].report == shown


def test_a_changed_question_is_refused_not_drawn_again(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    _answer(state, _survey(_categorical(["a", "b"])), {"os": 0})
    changed = _survey(_categorical(["a", "b", "c"]))
    before = state.memo_path.read_bytes()
    with pytest.raises(RefusedError, match="is not the question your report for it was drawn"):
        _answer(state, changed, {"os": 0})
    assert state.memo_path.read_bytes() == before
    reworded = _survey(_categorical(["a", "b"]))
    reworded.questions[0].text = "Which one, really?"
    assert _answer(state, reworded, {"os": 1}).prepared[0].reused  # the text does not count


def test_files_hold_no_true_answer(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    survey = _survey(_categorical(["Atlantis", "Zanzibar", "Avalon"]), _numeric())
    truth = 37.123456789
    _answer(state, survey, {"os": 1, "hours": truth})
    memo = json.loads(state.memo_path.read_text())
    assert len(memo["reports"]) == 2
    forbidden = [b"Zanzibar", b"Avalon", b"37.12", truth.hex().encode(), struct.pack("<d", truth)]
    contents = [path.read_bytes() for path in state.directory.iterdir()]
    contents += [base64.b64decode(entry["report"]) for entry in memo["reports"]]
    for content in contents:
        for needle in forbidden:
            assert needle not in content, needle


def _v1(*reports: pb.Report) -> dict[str, object]:
    encoded = [base64.b64encode(r.SerializeToString()).decode() for r in reports]
    return {
        "format": "deniable-memo",
        "version": 1,
        "reports": {f"{i:064x}": e for i, e in enumerate(encoded)},
    }


def test_a_version_1_memo_keeps_each_questions_last_charged_report(tmp_path: Path) -> None:
    question = binary_question("q")
    first, second, other = (
        pb.Report(report_id=r, survey_id="s", question_id=q, mechanism=question.mechanism, bit=b)
        for r, q, b in (("r1", "q", True), ("r2", "q", False), ("r3", "p", True))
    )
    charges = [Charge("h:1", "s", c.question_id, "randomized_response", 1.0986, c.report_id, t)
               for c, t in ((first, "t1"), (other, "t2"), (second, "t3"))]  # fmt: skip
    state = LocalState(tmp_path)
    save_ledger(state.ledger_path, Ledger(tuple(charges)))
    state.memo_path.write_text(json.dumps(_v1(second, first, other)))
    memo = load_memo(state.memo_path, state.read_ledger())
    assert set(memo.entries) == {("h:1", "s", "q"), ("h:1", "s", "p")}
    kept = memo.get("h:1", "s", "q")
    assert kept is not None
    assert (kept.report, kept.drawn_at, kept.sent_at, kept.definition) == (second, "t3", None, None)
    # The next answer resends it, for free, and the memo is then written as version 3.
    plan = _answer(state, _survey(binary_question("p"), question), {"p": False, "q": True})
    assert [item.report for item in plan.prepared] == [other, second]
    assert plan.cost == 0
    assert json.loads(state.memo_path.read_text())["version"] == 3


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"format": "other"}, "format must be 'deniable-memo'"),
        ({"format": "deniable-memo", "version": 4, "reports": []}, "version must be 3 (or 1 or 2)"),
        ({"format": "deniable-memo", "version": 2, "reports": {}}, "reports must be a list"),
        ({"format": "deniable-memo", "version": 2, "reports": [{"report": "@@"}]}, "the keys"),
        (
            {"format": "deniable-memo", "version": 2, "reports": [
                {"aggregator": "h:1", "report": "@@", "definition": None, "drawn_at": "t",
                 "sent_at": None}]},
            "reports[0]: report is not a base64-encoded report",
        ),
        ({"format": "deniable-memo", "version": 1, "reports": []}, "reports must be an object"),
        (_v1(pb.Report(report_id="r9", survey_id="s", question_id="q")), "no charge in the ledger"),
    ],
)  # fmt: skip
def test_a_damaged_memo_fails_closed(tmp_path: Path, document: object, problem: str) -> None:
    path = tmp_path / "memo.json"
    path.write_text(json.dumps(document))
    with pytest.raises(LocalStateError) as raised:
        load_memo(path)
    assert str(path) in raised.value.message
    assert problem in raised.value.message
    assert json.loads(path.read_text()) == document


def test_a_second_report_for_a_question_is_refused_when_read_and_never_added() -> None:
    first = pb.Report(report_id="a", survey_id="s", question_id="q", bit=True)
    second = pb.Report(report_id="b", survey_id="s", question_id="q", bit=False)
    memo = Memo().add([Kept("h:1", first, None, "t1")]).add([Kept("h:1", second, None, "t2")])
    kept = memo.get("h:1", "s", "q")
    assert kept is not None
    assert kept.report == first
    document = memo.to_json()
    document["reports"].append(Kept("h:1", second, None, "t2").to_json())
    with pytest.raises(ValueError, match=r"reports\[1\]: a second report for question"):
        Memo.from_json(document)
