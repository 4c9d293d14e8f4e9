"""One contract every storage backend must keep (run for each backend URL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aggregator._errors import AlreadyExists, FailedPrecondition
from aggregator.storage import Storage, StoredReport, Tally, default_database_url, open_storage
from shared.deniable.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

Opener = Callable[[], Storage]


@pytest.fixture(params=["sqlite-file", "sqlite-memory"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    urls = {
        "sqlite-file": f"sqlite:///{tmp_path / 'contract.db'}",
        "sqlite-memory": "sqlite:///:memory:",
    }
    opened: list[Storage] = []

    def open_one() -> Storage:
        storage = open_storage(urls[request.param])
        opened.append(storage)
        return storage

    yield open_one
    for storage in opened:
        storage.close()  # closing twice is allowed


def survey(survey_id: str = "s1", questions: tuple[str, ...] = ("q1", "q2")) -> pb.Survey:
    return pb.Survey(id=survey_id, title="T", questions=[binary_question(q) for q in questions])


def report(rid: str, bit: int, question: str = "q1", survey_id: str = "s1") -> StoredReport:
    return StoredReport(rid, survey_id, question, bit, f"{rid}:{question}:{bit}".encode())


def test_survey_lifecycle(opener: Opener) -> None:
    storage = opener()
    assert storage.get_survey("s1") is None
    storage.create_survey(survey("s1"))
    storage.create_survey(survey("s2", ("a",)))
    got = storage.get_survey("s1")
    assert got is not None
    assert got.state == pb.SURVEY_STATE_OPEN
    assert [q.id for q in got.questions] == ["q1", "q2"]
    assert got.reports == 0
    assert [s.id for s in storage.list_surveys(False)] == ["s1", "s2"]
    closed = storage.close_survey("s1")
    assert closed is not None
    assert closed.state == pb.SURVEY_STATE_CLOSED
    assert [s.id for s in storage.list_surveys(False)] == ["s2"]
    assert [s.id for s in storage.list_surveys(True)] == ["s1", "s2"]
    assert storage.close_survey("missing") is None


def test_submit_updates_tallies_and_is_idempotent(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    batch = [report("a", 1), report("b", 0), report("c", 1, "q2")]
    outcome = storage.submit(batch)
    assert (outcome.stored, outcome.already_stored) == (3, 0)
    assert storage.tally("s1", "q1") == Tally(n=2, ones=1)
    assert storage.tally("s1", "q2") == Tally(n=1, ones=1)
    again = storage.submit([*batch, report("d", 1)])
    assert (again.stored, again.already_stored) == (1, 3)
    assert storage.tally("s1", "q1") == Tally(n=3, ones=2)
    survey_now = storage.get_survey("s1")
    assert survey_now is not None
    assert survey_now.reports == 4
    assert storage.tally("s1", "nope") is None
    assert storage.tally("nope", "q1") is None


def test_conflicting_resend_stores_nothing_of_the_batch(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.submit([report("a", 1)])
    with pytest.raises(AlreadyExists, match=r"reports\[1\].report_id: 'a'"):
        storage.submit([report("new", 1), report("a", 0)])
    assert storage.tally("s1", "q1") == Tally(n=1, ones=1)
    assert storage.submit([report("new", 1)]).stored == 1  # the rollback kept nothing


def test_closed_survey_stores_nothing(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    storage.close_survey("s1")
    with pytest.raises(FailedPrecondition, match="survey 's1' is closed"):
        storage.submit([report("x", 1, survey_id="s2"), report("y", 1)])
    assert storage.tally("s2", "q1") == Tally(n=0, ones=0)


def test_large_batch_crosses_parameter_chunks(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    batch = [report(f"r{i}", i % 2) for i in range(2500)]
    assert storage.submit(batch).stored == 2500
    assert storage.submit(batch).already_stored == 2500
    assert storage.tally("s1", "q1") == Tally(n=2500, ones=1250)


def test_reopening_a_file_database_keeps_everything(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'durable.db'}"
    storage = open_storage(url)
    storage.create_survey(survey())
    storage.submit([report("a", 1), report("b", 1)])
    storage.close()
    reopened = open_storage(url)
    assert reopened.tally("s1", "q1") == Tally(n=2, ones=2)
    assert reopened.submit([report("a", 1)]).already_stored == 1
    reopened.close()


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_database_url() == f"sqlite:///{tmp_path}/deniable/aggregator.db"
    with pytest.raises(ValueError, match="unsupported database URL 'mysql://x'"):
        open_storage("mysql://x")
    nested = tmp_path / "a" / "b" / "c.db"
    open_storage(f"sqlite:///{nested}").close()
    assert nested.exists()
