"""Memoized reports: HMAC keys under a local secret, no true answer stored, failing closed."""

from __future__ import annotations

import base64
import json
import stat
import struct
from pathlib import Path

import numpy as np
import pytest

from deniable.client._answer import Answer
from deniable.client._files import LocalStateError
from deniable.client._guard import LocalState
from deniable.client._memo import SECRET_BYTES, Memo, load_memo, load_secret, memo_key
from deniable.client._policy import Policy
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

SECRET = bytes(range(32))


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


def test_memo_key_depends_on_the_secret_and_everything_that_makes_an_answer() -> None:
    question = binary_question("q", 0.5)
    key = memo_key(SECRET, "h:1", "s", question, True)
    assert len(key) == 64
    assert int(key, 16) >= 0
    assert memo_key(SECRET, "h:1", "s", question, True) == key  # deterministic
    other_secret = bytes(reversed(SECRET))
    assert memo_key(other_secret, "h:1", "s", question, True) != key
    different = [
        memo_key(SECRET, "h:1", "s", question, False),
        memo_key(SECRET, "h:2", "s", question, True),
        memo_key(SECRET, "h:1", "t", question, True),
        memo_key(SECRET, "h:1", "s", binary_question("r", 0.5), True),
        memo_key(SECRET, "h:1", "s", binary_question("q", 0.25), True),  # another mechanism
        memo_key(SECRET, "h:1", "s", question, 1),  # option 1 is not "yes"
    ]
    assert len({key, *different}) == 1 + len(different)
    # Text and the server's privacy figures do not make a new question.
    reworded = binary_question("q", 0.5)
    reworded.text, reworded.privacy.epsilon = "Reworded?", 0.01
    assert memo_key(SECRET, "h:1", "s", reworded, True) == key
    # Options and ranges do: the same index under other options is another answer.
    assert memo_key(SECRET, "h:1", "s", _categorical(["a", "b"]), 0) != memo_key(
        SECRET, "h:1", "s", _categorical(["b", "a"]), 0
    )
    assert memo_key(SECRET, "h:1", "s", _numeric(0, 100), 12.5) != memo_key(
        SECRET, "h:1", "s", _numeric(0, 101), 12.5
    )
    # Numbers count exactly.
    assert memo_key(SECRET, "h:1", "s", _numeric(), 12.5) != memo_key(
        SECRET, "h:1", "s", _numeric(), float(np.nextafter(12.5, 13))
    )
    with pytest.raises(ValueError, match="secret must be 32 bytes, got 31"):
        memo_key(SECRET[:31], "h:1", "s", question, True)


def test_secret_is_created_once_private_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memo.key"
    assert load_secret(path, create=False) is None
    assert not path.exists()
    secret = load_secret(path, create=True)
    assert secret is not None
    assert len(secret) == SECRET_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret(path, create=True) == secret == load_secret(path, create=False)
    other = tmp_path / "other.key"
    assert load_secret(other, create=True) != secret  # from the CSPRNG, not derived
    path.write_bytes(secret[:16])
    with pytest.raises(LocalStateError, match="holds 16 bytes, not a 32-byte secret"):
        load_secret(path, create=True)
    assert path.read_bytes() == secret[:16]  # not replaced


def _plan_and_commit(state: LocalState, survey: pb.Survey, answers: dict[str, Answer]) -> None:
    specs = {q.id: Policy().check(q) for q in survey.questions}
    with state.session(write=True) as session:
        session.commit(session.plan("h:1", survey, specs, answers))


def test_files_hold_no_true_answer(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    options = ["Atlantis", "Zanzibar", "Avalon"]
    survey = pb.Survey(
        id="s", state=pb.SURVEY_STATE_OPEN, questions=[_categorical(options), _numeric()]
    )
    truth = 37.123456789
    _plan_and_commit(state, survey, {"os": 1, "hours": truth})
    _plan_and_commit(state, survey, {"os": 2, "hours": truth})
    memo = json.loads(state.memo_path.read_text())
    assert len(memo["reports"]) == 3  # what someone with the file learns: 2 answers to "os"
    forbidden = [b"Zanzibar", b"Avalon", b"37.12", truth.hex().encode(), struct.pack("<d", truth)]
    contents = [path.read_bytes() for path in state.directory.iterdir()]
    contents += [base64.b64decode(value) for value in memo["reports"].values()]  # the reports
    for content in contents:
        for needle in forbidden:
            assert needle not in content, needle


def test_same_answer_reuses_the_report_and_changed_answer_charges_again(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    survey = pb.Survey(id="s", state=pb.SURVEY_STATE_OPEN, questions=[binary_question("q")])
    specs = {"q": Policy().check(survey.questions[0])}
    reports = []
    for answer in (True, True, False, True):
        with state.session(write=True) as session:
            plan = session.plan("h:1", survey, specs, {"q": answer})
            session.commit(plan)
            reports.append(plan.prepared[0])
    assert [item.reused for item in reports] == [False, True, False, True]
    assert reports[1].report == reports[0].report == reports[3].report  # same id, same value
    assert reports[2].report.report_id != reports[0].report.report_id
    ledger = state.read_ledger()
    assert [c.report_id for c in ledger.charges] == [
        reports[0].report.report_id,
        reports[2].report.report_id,
    ]


def test_dry_run_session_writes_nothing(tmp_path: Path) -> None:
    state = LocalState(tmp_path / "data")
    survey = pb.Survey(id="s", state=pb.SURVEY_STATE_OPEN, questions=[binary_question("q")])
    specs = {"q": Policy().check(survey.questions[0])}
    with state.session(write=False) as session:
        plan = session.plan("h:1", survey, specs, {"q": True})
        with pytest.raises(RuntimeError, match="needs a session opened with write=True"):
            session.commit(plan)
    assert not state.directory.exists()  # no ledger, memo, secret or lock file


def test_memo_without_its_secret_fails_closed(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    survey = pb.Survey(id="s", state=pb.SURVEY_STATE_OPEN, questions=[binary_question("q")])
    _plan_and_commit(state, survey, {"q": True})
    state.key_path.unlink()
    before = state.memo_path.read_bytes()
    for write in (False, True):
        with pytest.raises(LocalStateError) as raised, state.session(write=write):
            pass
        assert f"{state.key_path}: is missing, but memo.json holds 1 memoized" in (
            raised.value.message
        )
    assert not state.key_path.exists()  # no new secret that would silently orphan the memo
    assert state.memo_path.read_bytes() == before


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"format": "other"}, "format must be 'deniable-memo'"),
        ({"format": "deniable-memo", "version": 1, "reports": []}, "reports must be an object"),
        ({"format": "deniable-memo", "version": 1, "reports": {"k": "@@"}}, "not a base64"),
        (
            {"format": "deniable-memo", "version": 1, "reports": {"ab": "CgFh"}},
            "memo key must be 64 lowercase hex digits, got 'ab'",
        ),
    ],
)
def test_a_damaged_memo_fails_closed(tmp_path: Path, document: object, problem: str) -> None:
    path = tmp_path / "memo.json"
    path.write_text(json.dumps(document))
    with pytest.raises(LocalStateError) as raised:
        load_memo(path)
    assert str(path) in raised.value.message
    assert problem in raised.value.message
    assert json.loads(path.read_text()) == document


def test_memo_never_replaces_a_report() -> None:
    first = pb.Report(report_id="a", survey_id="s", question_id="q", bit=True)
    second = pb.Report(report_id="b", survey_id="s", question_id="q", bit=False)
    memo = Memo({"0" * 64: first}).add({"0" * 64: second})
    assert memo.get("0" * 64) == first
