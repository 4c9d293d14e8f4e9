"""The privacy ledger: exact sums, strict parsing, atomic writes, failing closed, one writer."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

import pytest

from deniable.client._files import LocalStateError, atomic_write
from deniable.client._guard import LocalState
from deniable.client._ledger import Charge, Ledger, aggregator_name, load_ledger, save_ledger
from deniable.client._policy import Policy
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

SAFETY_TIMEOUT = 120  # only so that a broken lock fails the test instead of hanging it


def charge(
    epsilon: float = 1.0, survey: str = "s", aggregator: str = "h:1", draw: str = ""
) -> Charge:
    """A charge of a fresh draw (a new report id each), or of a copy of ``draw``."""
    report_id = secrets.token_hex(16)
    return Charge(aggregator, survey, "q", "randomized_response", epsilon, report_id, "t", draw)


@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("Example.ORG.:0443", "example.org:443"),
        ("[0:0:0:0:0:0:0:1]:7", "[::1]:7"),
        ("[::FFFF:1.2.3.4]:7", "[::ffff:102:304]:7"),
        ("localhost:50051", "localhost:50051"),  # not resolved: another name, another budget
        # Several daemons of one aggregator: one name however the target spells them.
        ("dns:///Agg.Example.ORG.:0443", "agg.example.org:443"),
        ("dns:agg.example.org:443", "agg.example.org:443"),
        ("ipv4:127.0.0.1:5002,127.0.0.1:05001", "127.0.0.1:5001,127.0.0.1:5002"),
        ("ipv4:127.0.0.1:5001,127.0.0.1:5002,127.0.0.1:5001", "127.0.0.1:5001,127.0.0.1:5002"),
        ("ipv4:127.0.0.1:5001", "127.0.0.1:5001"),
        ("ipv6:[0::1]:7,[::2]:7", "[::1]:7,[::2]:7"),
    ],
)
def test_aggregator_names_are_normalized(target: str, name: str) -> None:
    assert aggregator_name(target) == name


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("", "empty"),
        ("host", "'host' is not HOST:PORT"),
        ("host:0", "port '0' is not 1..65535"),
        ("::1:7", "write an IPv6 address as [::1]:PORT"),
        ("a:1,b:2", "a list of daemons needs ipv4: or ipv6:"),
        ("ipv4:127.0.0.1:5001,", "an empty address in the list"),
        ("ipv4:127.0.0.1:5001,agg.example.org:5002", "'agg.example.org' is not an IPv4 address"),
        ("ipv6:127.0.0.1:5001", "'127.0.0.1' is not an IPv6 address"),
        ("dns://8.8.8.8/agg.example.org:443", "a DNS server is not supported"),
        ("unix:/run/aggregator.sock", "not one of HOST:PORT"),
    ],
)
def test_garbage_targets_are_refused_naming_them(target: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"target {target!r}: {reason}")):
        aggregator_name(target)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"epsilon": -0.5}, "epsilon must be finite and >= 0, got -0.5"),
        ({"epsilon": math.inf}, "epsilon must be finite and >= 0, got inf"),
        ({"epsilon": math.nan}, "epsilon must be finite and >= 0, got nan"),
        ({"epsilon": True}, "epsilon must be a number, got True"),
        ({"epsilon": "1"}, "epsilon must be a number, got '1'"),
        ({"report_id": ""}, "report_id must be a non-empty string, got ''"),
        ({"survey_id": 5}, "survey_id must be a non-empty string, got 5"),
    ],
)
def test_charges_are_validated(changes: dict[str, Any], message: str) -> None:
    fields = charge().to_json() | {"aggregator": "h:1", "survey_id": "s"} | changes
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        Charge(**fields)


def test_spent_adds_up_exactly_per_aggregator_and_survey(tmp_path: Path) -> None:
    tenth = [charge(0.1, survey=f"s{i % 2}") for i in range(10)]
    ledger = Ledger().add(tenth).add([charge(2.5, aggregator="other:2")])
    assert ledger.spent("h:1") == 1.0  # math.fsum: ten 0.1s make exactly 1.0
    assert ledger.spent("h:1", "s0") == 0.5
    assert ledger.spent("other:2") == 2.5
    assert ledger.spent("nobody:3") == 0.0
    assert ledger.aggregators() == ["h:1", "other:2"]
    assert ledger.surveys("h:1") == ["s0", "s1"]
    path = tmp_path / "ledger.json"
    save_ledger(path, ledger)
    again = load_ledger(path)
    assert sorted(again.charges, key=repr) == sorted(ledger.charges, key=repr)
    document = json.loads(path.read_text())
    assert document["format"] == "deniable-ledger"
    assert len(document["aggregators"]["h:1"]["s0"]) == 5  # per aggregator, then survey
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


CORRUPT = [
    (b"", "is not valid JSON"),
    (b'{"format": "deniable-ledger", "version": 1, "aggre', "is not valid JSON"),
    (b"\xff\xfe\x00", "is not valid JSON"),
    (b"[]", "is not a valid ledger (format must be 'deniable-ledger')"),
    (b'{"format": "deniable-ledger", "version": 3, "aggregators": {}}', "version must be 2 (or 1)"),
    (
        b'{"format": "deniable-ledger", "version": 1, "aggregators": {"h:1": {"s": '
        b'[{"question_id": "q", "mechanism": "grr", "epsilon": -1, "report_id": "r", "at": "t"}'
        b"]}}}",
        "[0]: epsilon must be finite and >= 0, got -1",
    ),
    (
        b'{"format": "deniable-ledger", "version": 1, "aggregators": {"h:1": {"s": [{}]}}}',
        "aggregators['h:1']['s'][0] must have the keys",
    ),
]


@pytest.mark.parametrize(("content", "problem"), CORRUPT)
def test_a_damaged_ledger_fails_closed_and_is_left_alone(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    state = LocalState(tmp_path)
    state.ledger_path.write_bytes(content)
    for write in (False, True):
        with pytest.raises(LocalStateError) as raised, state.session(write=write):
            pass
        message = raised.value.message
        assert message.startswith(f"{state.ledger_path}: "), message
        assert problem in message
        assert "restore the file from a backup, or move it aside" in message
        assert raised.value.exit_code == 5
    assert state.ledger_path.read_bytes() == content  # never reset


def test_an_unreadable_ledger_fails_closed(tmp_path: Path) -> None:
    state = LocalState(tmp_path)
    state.ledger_path.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(LocalStateError, match="cannot be read"):
        state.read_ledger()


def test_atomic_write_replaces_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "deep" / "ledger.json"
    atomic_write(path, b"old")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(LocalStateError, match=r"ledger.json: cannot be written \(disk full\)"):
        atomic_write(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in path.parent.iterdir()] == ["ledger.json"]  # no temporary left


# --- one writer at a time: two processes, ordered by events, no timing assumptions --------


def _survey() -> pb.Survey:
    return pb.Survey(id="s", state=pb.SURVEY_STATE_OPEN, questions=[binary_question("q", 0.5)])


def _answer_in_child(directory: str, answer: bool, held: Any, go: Any, waiting: Any) -> None:
    """Open a writing session (the lock), tell the parent, wait for it, then plan and commit."""
    state = LocalState(Path(directory))
    with state.session(write=True, on_wait=lambda message: waiting.set()) as session:
        held.set()
        if not go.wait(SAFETY_TIMEOUT):
            raise RuntimeError("parent never said go")
        survey = _survey()
        specs = {q.id: Policy().check(q) for q in survey.questions}
        plan = session.plan("h:1", survey, specs, {"q": answer})
        session.keep(plan, survey)
        plan.check_budget(Policy())
        session.commit(plan)


def _race(directory: Path, first: bool, second: bool) -> list[int]:
    """Process A holds the lock; B starts, finds it busy (proved by its on_wait); A commits."""
    context = multiprocessing.get_context("spawn")
    events = [context.Event() for _ in range(5)]
    a_held, b_held, go, a_waiting, b_waiting = events
    go_b = context.Event()
    a = context.Process(
        target=_answer_in_child, args=(str(directory), first, a_held, go, a_waiting)
    )
    b = context.Process(
        target=_answer_in_child, args=(str(directory), second, b_held, go_b, b_waiting)
    )
    a.start()
    assert a_held.wait(SAFETY_TIMEOUT)
    b.start()
    assert b_waiting.wait(SAFETY_TIMEOUT)  # B is blocked on the lock A holds
    assert not b_held.is_set()
    go.set()
    a.join(SAFETY_TIMEOUT)
    assert b_held.wait(SAFETY_TIMEOUT)  # only now, after A committed and let go
    go_b.set()
    b.join(SAFETY_TIMEOUT)
    assert not a_waiting.is_set()
    return [a.exitcode or 0, b.exitcode or 0]


@pytest.mark.parametrize("second", [True, False], ids=["same-answer", "other-answer"])
def test_concurrent_writers_are_serialized_and_the_second_sends_the_first_report(
    tmp_path: Path, second: bool
) -> None:
    assert _race(tmp_path, True, second) == [0, 0]
    ledger = load_ledger(tmp_path / "ledger.json")
    # B read the memo after A's write: it found A's report, whatever B answered, so the
    # question has one report and one charge.
    assert len(ledger.charges) == 1
    assert ledger.spent("h:1") == pytest.approx(math.log(3))
    assert len(json.loads((tmp_path / "memo.json").read_text())["reports"]) == 1
