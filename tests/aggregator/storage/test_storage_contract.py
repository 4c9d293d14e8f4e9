"""One contract every storage backend must keep (run for each backend URL)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from deniable.aggregator.storage import (
    ReportGroup,
    Selection,
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
    default_database_url,
    open_storage,
)
from deniable.aggregator.storage.codec import decode_batch
from deniable.shared.errors import AlreadyExists, FailedPrecondition, NotFound, Unauthenticated
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

Opener = Callable[[], Storage]
STREAMED_BATCHES = 40  # more than two pages of Storage.log (16 rows on either backend)
HANG_GUARD = 60.0  # seconds: only a guard against a deadlock, never a speed limit


def backend_url(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> str:
    """A new database of the named backend (PostgreSQL: a new database on the test server)."""
    if name == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    if name == "sqlite-memory":
        return "sqlite:///:memory:"
    return f"sqlite:///{tmp_path / 'contract.db'}"


@pytest.fixture(params=["sqlite-file", "sqlite-memory", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    url = backend_url(request, tmp_path, request.param)
    opened: list[Storage] = []

    def open_one() -> Storage:
        storage = open_storage(url)
        opened.append(storage)
        return storage

    yield open_one
    for storage in opened:
        storage.close()  # closing twice is allowed


@pytest.fixture(params=["sqlite-file", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new database that keeps its contents when closed and reopened."""
    return backend_url(request, tmp_path, request.param)


def survey(survey_id: str = "s1", questions: tuple[str, ...] = ("q1", "q2")) -> pb.Survey:
    return pb.Survey(id=survey_id, title="T", questions=[binary_question(q) for q in questions])


def report(rid: str, bit: int, question: str = "q1", survey_id: str = "s1") -> pb.Report:
    return pb.Report(
        report_id=rid,
        survey_id=survey_id,
        question_id=question,
        mechanism=binary_question(question).mechanism,
        bit=bool(bit),
    )


def submission(reports: list[pb.Report], releases: ReleaseSteps | None = None) -> Submission:
    """The Submission the service hands to storage for these (valid) reports."""
    data = pb.SubmitReportsRequest(reports=reports).SerializeToString()
    batch = decode_batch(data, max_batch=len(reports))
    groups = [
        ReportGroup(
            group.template.survey_id,
            group.template.question_id,
            group.rows,
            partial(lambda bits, keep: [int(bits[keep].sum())], group.values),
            releases,
        )
        for group in batch.groups
    ]
    return Submission(batch.report_ids, batch.payloads, groups, batch.encode, batch.positions)


def submit(storage: Storage, reports: list[pb.Report]) -> SubmitOutcome:
    return storage.submit(submission(reports))


def logged(storage: Storage, survey_id: str = "s1") -> list[pb.Report]:
    """Every report in the survey's log, in order."""
    return [
        report
        for chunk in storage.log(survey_id)
        for report in pb.SubmitReportsRequest.FromString(chunk).reports
    ]


def recount(storage: Storage, survey_id: str, question_id: str) -> Tally:
    """The tally recomputed from the log."""
    bits = [int(r.bit) for r in logged(storage, survey_id) if r.question_id == question_id]
    return Tally(n=len(bits), sums=(sum(bits),) if bits else ())


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
    outcome = submit(storage, batch)
    assert (outcome.stored, outcome.already_stored) == (3, 0)
    assert storage.tally("s1", "q1") == Tally(n=2, sums=(1,))
    assert storage.tally("s1", "q2") == Tally(n=1, sums=(1,))
    again = submit(storage, [*batch, report("d", 1)])
    assert (again.stored, again.already_stored) == (1, 3)
    assert storage.tally("s1", "q1") == Tally(n=3, sums=(2,))
    survey_now = storage.get_survey("s1")
    assert survey_now is not None
    assert survey_now.reports == 4
    assert storage.tally("s1", "nope") is None
    assert storage.tally("nope", "q1") is None
    assert [r.report_id for r in logged(storage)] == ["a", "b", "c", "d"]  # each once
    assert all(recount(storage, "s1", q) == storage.tally("s1", q) for q in ("q1", "q2"))


def batch_ids(row: bytes) -> list[str]:
    """The report ids of one log row (a stored batch), in order."""
    return [r.report_id for r in pb.SubmitReportsRequest.FromString(row).reports]


def test_the_log_streams_while_batches_keep_coming(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2"))
    batches = [[f"b{b}-{i}" for i in range(3)] for b in range(STREAMED_BATCHES)]
    for number, batch in enumerate(batches):
        submit(storage, [report(rid, number % 2) for rid in batch])
        submit(storage, [report(f"other{number}", 1, survey_id="s2")])  # interleaved rows
    rows = storage.log("s1")  # reads nothing yet
    submit(storage, [report("b0-0", 0), report("b0-new", 1)])  # a resend: its row holds the new one
    batches.append(["b0-new"])
    first = next(rows)
    with ThreadPoolExecutor(1) as thread:  # the reader holds no lock between pages
        late = thread.submit(submit, storage, [report("late", 1)]).result(timeout=HANG_GUARD)
    assert late.stored == 1
    assert [batch_ids(row) for row in [first, *rows]] == batches  # each batch once, in order
    assert batch_ids(list(storage.log("s1"))[-1]) == ["late"]  # for the next reader
    closed_early = storage.log("s2")
    assert batch_ids(next(closed_early)) == ["other0"]
    closed_early.close()  # ends its read (PostgreSQL: gives the connection back)
    assert submit(storage, [report("after", 1, survey_id="s2")]).stored == 1
    last = [batch_ids(row)[0] for row in storage.log("s2")][-2:]
    assert last == [f"other{STREAMED_BATCHES - 1}", "after"]
    assert list(storage.log("unknown")) == []


def test_a_release_is_the_tally_at_the_commit_that_reaches_its_point(durable_url: str) -> None:
    path = durable_url
    storage = open_storage(path)
    steps = ReleaseSteps(first=3, step=4)
    storage.create_survey(survey())
    assert storage.released("s1", "q1") == Tally(0)
    assert storage.released("s1", "nope") is None
    assert storage.released("nope", "q1") is None
    storage.submit(submission([report("a", 1), report("b", 0)], steps))
    assert storage.released("s1", "q1") == Tally(0)
    storage.submit(submission([report("c", 1), report("d", 1), report("e", 1, "q2")], steps))
    assert storage.released("s1", "q1") == Tally(4, (3,))  # crossed 3 at 4
    assert storage.released("s1", "q2") == Tally(0)  # each question on its own
    storage.submit(submission([report(f"f{i}", 0) for i in range(3)], steps))
    assert storage.released("s1", "q1") == Tally(4, (3,))  # 7 < 4 + 4
    with pytest.raises(AlreadyExists):  # would cross 8, but is refused whole
        storage.submit(submission([report("g", 1), report("a", 0)], steps))
    assert storage.released("s1", "q1") == Tally(4, (3,))
    storage.submit(submission([report("g", 1)], steps))
    assert storage.released("s1", "q1") == storage.tally("s1", "q1") == Tally(8, (4,))
    storage.close()
    reopened = open_storage(path)
    try:
        assert reopened.released("s1", "q1") == Tally(8, (4,))
        reopened.submit(submission([report("h", 1)], steps))
        assert reopened.released("s1", "q1") == Tally(8, (4,))  # 9 < 8 + 4
    finally:
        reopened.close()


def big_submission(reports: list[pb.Report], releases: ReleaseSteps | None = None) -> Submission:
    """A batch whose tally sums need more than 64 bits, as a numeric mechanism's can.

    (Duchi's sums are exact integers on a fine grid: a few reports' sum of squares
    already exceeds a signed 64-bit integer.)
    """
    plain = submission(reports, releases)

    def huge(group: ReportGroup, keep: Selection) -> list[int]:
        return [2**100 * len(group.rows[keep]), -(2**70)]

    groups = [replace(group, tally=partial(huge, group)) for group in plain.groups]
    return replace(plain, groups=groups)


@pytest.mark.parametrize("stepped", [False, True])
def test_tally_sums_are_exact_beyond_64_bits(durable_url: str, stepped: bool) -> None:
    steps = ReleaseSteps(first=2, step=2) if stepped else None
    storage = open_storage(durable_url)
    try:
        storage.create_survey(survey())
        storage.submit(big_submission([report("a", 1), report("b", 0)], steps))
        storage.submit(big_submission([report("c", 1)], steps))
        storage.submit(big_submission([report("a", 1)], steps))  # a resend adds nothing
        expected = Tally(3, (3 * 2**100, -2 * 2**70))
        assert storage.tally("s1", "q1") == expected
        if stepped:
            assert storage.released("s1", "q1") == Tally(2, (2 * 2**100, -(2**70)))
    finally:
        storage.close()
    reopened = open_storage(durable_url)
    try:
        assert reopened.tally("s1", "q1") == expected
    finally:
        reopened.close()


def test_conflicting_resend_stores_nothing_of_the_batch(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    submit(storage, [report("a", 1)])
    with pytest.raises(
        AlreadyExists, match=r"reports\[1\].report_id: 'a' is already stored in survey 's1'"
    ):
        submit(storage, [report("new", 1), report("a", 0)])
    assert storage.tally("s1", "q1") == Tally(n=1, sums=(1,))
    assert submit(storage, [report("new", 1)]).stored == 1  # the rollback kept nothing
    assert [r.report_id for r in logged(storage)] == ["a", "new"]


def test_a_batch_failing_midway_changes_nothing(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    submit(storage, [report("a", 1), report("b", 1, "q2")])
    reports = [report("c", 1), report("d", 0, "q2"), report("a", 1)]
    good = submission(reports)

    def boom(keep: object) -> list[int]:
        raise RuntimeError("disk on fire")

    # The second question's tally fails after the first question's tally was written.
    broken = replace(good, groups=[good.groups[0], replace(good.groups[1], tally=boom)])
    for _ in range(2):
        with pytest.raises(RuntimeError, match="disk on fire"):
            storage.submit(broken)
        assert storage.tally("s1", "q1") == Tally(n=1, sums=(1,))
        assert storage.tally("s1", "q2") == Tally(n=1, sums=(1,))
    outcome = storage.submit(good)  # nothing of the failed batch was claimed or counted
    assert (outcome.stored, outcome.already_stored) == (2, 1)
    for question in ("q1", "q2"):
        assert storage.tally("s1", question) == recount(storage, "s1", question)
    assert storage.tally("s1", "q1") == Tally(n=2, sums=(2,))


def test_closed_survey_stores_nothing(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    storage.close_survey("s1")
    with pytest.raises(FailedPrecondition, match="survey 's1' is closed"):
        submit(storage, [report("x", 1, survey_id="s2"), report("y", 1)])
    assert storage.tally("s2", "q1") == Tally(n=0)
    assert logged(storage, "s2") == []


def test_report_ids_are_scoped_to_their_survey(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    assert submit(storage, [report("a", 1)]).stored == 1
    assert submit(storage, [report("a", 0, survey_id="s2")]).stored == 1
    assert storage.tally("s2", "q1") == Tally(n=1, sums=(0,))


def test_batch_spanning_surveys_and_questions(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    batch = [report("a", 1), report("b", 1, survey_id="s2"), report("c", 0, "q2"), report("d", 1)]
    assert submit(storage, batch).stored == 4
    assert [r.report_id for r in logged(storage)] == ["a", "c", "d"]
    assert [r.report_id for r in logged(storage, "s2")] == ["b"]
    assert storage.tally("s1", "q1") == Tally(n=2, sums=(2,))
    assert storage.tally("s1", "q2") == Tally(n=1, sums=(0,))
    again = submit(storage, [*batch, report("e", 0, "q2")])
    assert (again.stored, again.already_stored) == (1, 4)
    for survey_id, question in (("s1", "q1"), ("s1", "q2"), ("s2", "q1")):
        assert recount(storage, survey_id, question) == storage.tally(survey_id, question)


def test_a_resend_is_recognised_whatever_the_shape_of_its_batch(opener: Opener) -> None:
    """Reports stored by a uniform yes/no batch, resent in a mixed one, and the reverse."""
    from deniable.aggregator.storage.codec import UniformPayloads

    storage = opener()
    storage.create_survey(survey())
    uniform = submission([report("u1", 1), report("u2", 0)])
    mixed = submission([report("m-long", 1), report("m", 0, "q2")])
    assert isinstance(uniform.payloads, UniformPayloads)
    assert not isinstance(mixed.payloads, UniformPayloads)
    assert storage.submit(uniform).stored == 2
    assert storage.submit(mixed).stored == 2
    again = submit(storage, [report("u1", 1), report("u2", 0), report("x", 1, "q2")])
    assert (again.stored, again.already_stored) == (1, 2)
    back = submit(storage, [report("m-long", 1), report("n-long", 1)])  # uniform again
    assert (back.stored, back.already_stored) == (1, 1)
    for changed in ([report("u2", 1), report("y", 1, "q2")], [report("m-long", 0)]):
        rid = changed[0].report_id
        with pytest.raises(AlreadyExists, match=rf"reports\[0\].report_id: '{rid}' is already"):
            submit(storage, changed)
    assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(4, (3,))


def test_large_batch_crosses_parameter_chunks(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    batch = [report(f"r{i}", i % 2) for i in range(2500)]
    assert submit(storage, batch).stored == 2500
    assert submit(storage, batch).already_stored == 2500
    assert storage.tally("s1", "q1") == Tally(n=2500, sums=(1250,))


def test_reopening_a_file_database_keeps_everything(durable_url: str) -> None:
    url = durable_url
    storage = open_storage(url)
    storage.create_survey(survey())
    submit(storage, [report("a", 1), report("b", 1)])
    storage.close()
    reopened = open_storage(url)
    assert reopened.tally("s1", "q1") == Tally(n=2, sums=(2,))
    assert submit(reopened, [report("a", 1)]).already_stored == 1
    with pytest.raises(AlreadyExists):
        submit(reopened, [report("b", 0)])
    reopened.close_survey("s1")
    reopened.close()
    closed = open_storage(url)
    with pytest.raises(FailedPrecondition, match="survey 's1' is closed"):
        submit(closed, [report("c", 1)])
    assert closed.tally("s1", "q1") == Tally(n=2, sums=(2,))
    closed.close()


def test_a_file_database_serves_one_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    first = open_storage(url)
    with pytest.raises(StorageError, match="in use by another aggregator"):
        open_storage(url)
    first.close()
    open_storage(url).close()  # released on close


def test_a_database_where_no_file_can_be_made_is_named(tmp_path: Path) -> None:
    """A folder that cannot be made, or a lock file that cannot be opened: StorageError."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match=r"cannot create the database's folder '.*a-file'"):
        open_storage(f"sqlite:///{blocker / 'x.db'}")
    with pytest.raises(StorageError, match=r"cannot open the database's lock file '/proc/x\.db"):
        open_storage("sqlite:////proc/x.db")
    assert blocker.read_text() == "not a folder"


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_database_url() == f"sqlite:///{tmp_path}/deniable/aggregator.db"
    with pytest.raises(ValueError, match="unsupported database URL 'mysql://x'"):
        open_storage("mysql://x")
    nested = tmp_path / "a" / "b" / "c.db"
    open_storage(f"sqlite:///{nested}").close()
    assert nested.exists()


# --- enrollment: token hashes and one report per (token, question) ---------------------


def _hash(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def enrolled(survey_id: str = "s1") -> pb.Survey:
    created = survey(survey_id)
    created.enrollment_required = True
    return created


def submit_with(storage: Storage, token: str, reports: list[pb.Report]) -> SubmitOutcome:
    return storage.submit(replace(submission(reports), token_hash=_hash(token)))


def test_issue_tokens_counts_them_for_open_surveys_only(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(enrolled())
    storage.issue_tokens("s1", [_hash("t1"), _hash("t2")])
    storage.issue_tokens("s1", [_hash("t3")])
    got = storage.get_survey("s1")
    assert got is not None
    assert (got.tokens_issued, got.enrollment_required) == (3, True)
    with pytest.raises(NotFound, match="unknown survey 'nope'"):
        storage.issue_tokens("nope", [_hash("t4")])
    with pytest.raises(Unauthenticated):  # the refused token was not stored
        submit_with(storage, "t4", [report("a", 1)])
    storage.close_survey("s1")
    with pytest.raises(FailedPrecondition, match="survey 's1' is closed"):
        storage.issue_tokens("s1", [_hash("t5")])
    assert [s.tokens_issued for s in storage.list_surveys(True)] == [3]


def test_a_token_stores_one_report_per_question(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(enrolled())
    storage.issue_tokens("s1", [_hash("mine"), _hash("yours")])
    first = submit_with(storage, "mine", [report("a", 1), report("b", 0, "q2")])
    assert (first.stored, first.already_stored) == (2, 0)
    again = submit_with(storage, "mine", [report("a", 1), report("b", 0, "q2")])
    assert (again.stored, again.already_stored) == (0, 2)
    answered = r"reports\[0\]: this enrollment token already answered question 'q1'"
    for different in (report("c", 1), report("a", 0)):  # another id; the same id, changed
        with pytest.raises(AlreadyExists, match=answered):
            submit_with(storage, "mine", [different])
    with pytest.raises(AlreadyExists, match=r"reports\[0\].report_id: 'a' is already stored"):
        submit_with(storage, "yours", [report("a", 1)])  # the same report, another token
    with pytest.raises(Unauthenticated, match="not a token issued for survey 's1'"):
        submit_with(storage, "never issued", [report("d", 1)])
    assert storage.tally("s1", "q1") == Tally(n=1, sums=(1,))
    assert [r.report_id for r in logged(storage)] == ["a", "b"]
    assert submit_with(storage, "yours", [report("c", 0)]).stored == 1  # nothing was bound
    assert recount(storage, "s1", "q1") == storage.tally("s1", "q1") == Tally(n=2, sums=(1,))


def test_a_token_answers_only_its_own_survey(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(enrolled())
    storage.create_survey(enrolled("s2"))
    storage.issue_tokens("s2", [_hash("theirs")])
    with pytest.raises(Unauthenticated, match="not a token issued for survey 's1'"):
        submit_with(storage, "theirs", [report("a", 1)])
    assert storage.tally("s1", "q1") == Tally(n=0)
    assert submit_with(storage, "theirs", [report("a", 1, survey_id="s2")]).stored == 1


def test_token_bindings_survive_reopening(durable_url: str) -> None:
    url = durable_url
    storage = open_storage(url)
    storage.create_survey(enrolled())
    storage.issue_tokens("s1", [_hash("mine")])
    submit_with(storage, "mine", [report("a", 1)])
    storage.close()
    reopened = open_storage(url)
    try:
        got = reopened.get_survey("s1")
        assert got is not None
        assert got.tokens_issued == 1
        with pytest.raises(AlreadyExists, match="already answered question 'q1'"):
            submit_with(reopened, "mine", [report("b", 0)])
        assert submit_with(reopened, "mine", [report("a", 1)]).already_stored == 1
        assert submit_with(reopened, "mine", [report("c", 1, "q2")]).stored == 1
    finally:
        reopened.close()


# --- PostgreSQL only ---------------------------------------------------------------------


def test_postgres_refuses_a_newer_schema_and_names_the_versions(postgres_url: str) -> None:
    import psycopg

    open_storage(postgres_url).close()
    with psycopg.connect(postgres_url) as db:
        db.execute("UPDATE schema_version SET version = 99")
    from deniable.aggregator.storage.postgres import SCHEMA_VERSION

    message = f"schema version 99, newer than this aggregator's {SCHEMA_VERSION}"
    with pytest.raises(StorageError, match=message):
        open_storage(postgres_url)


def test_postgres_unreachable_names_the_url_without_its_password(
    postgres_cluster: object,
) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://alice:s3cret@127.0.0.1:{port}/db"
    with pytest.raises(StorageError) as refused:
        open_storage(url)
    message = str(refused.value)
    assert f"cannot open PostgreSQL database 'postgresql://alice@127.0.0.1:{port}/db'" in message
    assert "s3cret" not in message


def test_postgres_reopened_by_a_second_daemon_shares_ids(postgres_url: str) -> None:
    first, second = (
        open_storage(postgres_url),
        open_storage(postgres_url.replace("postgresql:", "postgres:")),
    )
    try:
        first.create_survey(survey())
        assert submit(first, [report("a", 1), report("b", 0)]).stored == 2
        again = submit(second, [report("a", 1), report("c", 1)])  # the other daemon
        assert (again.stored, again.already_stored) == (1, 1)
        with pytest.raises(AlreadyExists, match=r"reports\[0\].report_id: 'b' is already stored"):
            submit(second, [report("b", 1)])
        assert first.tally("s1", "q1") == second.tally("s1", "q1") == Tally(n=3, sums=(2,))
    finally:
        first.close()
        second.close()


def _race(
    daemons: list[Storage], token: str, reports: list[pb.Report]
) -> list[SubmitOutcome | Exception]:
    """Daemon ``i`` submits ``reports[i]`` with the token, both threads released at once."""
    import threading

    start = threading.Barrier(len(daemons))
    results: list[SubmitOutcome | Exception] = [RuntimeError("not run")] * len(daemons)

    def send(side: int) -> None:
        start.wait(timeout=30)
        try:
            results[side] = submit_with(daemons[side], token, [reports[side]])
        except Exception as error:  # the loser's refusal, checked by the caller
            results[side] = error

    threads = [threading.Thread(target=send, args=(side,)) for side in range(len(daemons))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_postgres_two_daemons_racing_one_token_store_one_report_per_question(
    postgres_url: str,
) -> None:
    """Two daemons (two storages on one database) send the same token at once.

    Even rounds send different reports for the question: one is stored, the other is
    refused as an answered question. Odd rounds send the same report: one stores it, the
    other finds it stored before.
    """
    daemons = [open_storage(postgres_url), open_storage(postgres_url)]
    rounds = 6
    try:
        daemons[0].create_survey(enrolled())
        daemons[0].issue_tokens("s1", [_hash(f"t{i}") for i in range(rounds)])
        for round_ in range(rounds):
            if round_ % 2:
                results = _race(daemons, f"t{round_}", [report(f"r{round_}", 1)] * 2)
                assert all(isinstance(r, SubmitOutcome) for r in results), results
                outcomes = sorted((r.stored, r.already_stored) for r in results)  # type: ignore[union-attr]
                assert outcomes == [(0, 1), (1, 0)]
            else:
                sent = [report(f"r{round_}-{side}", side) for side in (0, 1)]
                results = _race(daemons, f"t{round_}", sent)
                stored = [r for r in results if isinstance(r, SubmitOutcome)]
                refused = [r for r in results if isinstance(r, AlreadyExists)]
                assert len(stored) == len(refused) == 1, results
                assert stored[0].stored == 1
                assert "already answered question 'q1'" in str(refused[0])
        tally = daemons[1].tally("s1", "q1")
        assert tally is not None
        assert tally.n == rounds
        assert tally == recount(daemons[0], "s1", "q1")
    finally:
        for storage in daemons:
            storage.close()


def _tally_rows(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*) FROM tallies WHERE question_id = 'q1'").fetchone()
    assert row is not None
    return int(row[0])


def test_postgres_tally_rows_are_folded_without_changing_the_sum(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two daemons submit while folds run from both and a reader checks every sum it sees.

    A fold must never make a read count a batch twice (its row and the sum holding it) or
    not at all: the reader's totals only grow, and end at the number of reports stored.
    """
    import threading

    from deniable.aggregator.storage.postgres import _storage as _postgres

    monkeypatch.setattr(_postgres, "COMPACT_EVERY", 5)  # fold often: every ~5th batch
    monkeypatch.setattr(_postgres, "COMPACT_ROWS", 3)  # and on reads of more than 3 rows
    daemons = [_postgres.PostgresStorage(postgres_url), _postgres.PostgresStorage(postgres_url)]
    batches, size = 12, 10
    try:
        daemons[0].create_survey(survey())
        done = threading.Event()
        seen: list[int] = []

        def send(side: int) -> None:
            for b in range(batches):
                reports = [report(f"d{side}-b{b}-r{i}", i % 2) for i in range(size)]
                assert submit(daemons[side], reports).stored == size

        def fold_and_read() -> None:
            for step in range(10_000):  # bounded; ends when the senders are done
                daemons[step % 2].compact("s1", "q1")
                tally = daemons[(step + 1) % 2].tally("s1", "q1")
                assert tally is not None
                seen.append(tally.n)
                if done.is_set():
                    return

        senders = [threading.Thread(target=send, args=(side,)) for side in (0, 1)]
        folder = threading.Thread(target=fold_and_read)
        for thread in [*senders, folder]:
            thread.start()
        for thread in senders:
            thread.join(timeout=120)
        done.set()
        folder.join(timeout=120)
        total = 2 * batches * size
        assert seen == sorted(seen), "a read saw fewer reports than an earlier one"
        assert all(n % size == 0 and n <= total for n in seen)  # whole batches, none twice
        assert daemons[0].tally("s1", "q1") == recount(daemons[0], "s1", "q1")
        assert daemons[0].tally("s1", "q1") == Tally(total, (total // 2,))
        daemons[1].compact("s1", "q1")
        assert _tally_rows(postgres_url) == 1  # everything folded into batch 0
        assert daemons[1].tally("s1", "q1") == Tally(total, (total // 2,))
    finally:
        for storage in daemons:
            storage.close()


def test_postgres_batches_fold_tally_rows_as_they_go(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deniable.aggregator.storage.postgres import _storage as _postgres

    monkeypatch.setattr(_postgres, "COMPACT_EVERY", 4)
    storage = open_storage(postgres_url)
    try:
        storage.create_survey(survey())
        for b in range(12):
            submit(storage, [report(f"b{b}", 1)])
        assert _tally_rows(postgres_url) < 1 + 12 - 4  # at least one fold of 4 rows
        assert storage.tally("s1", "q1") == Tally(12, (12,))
    finally:
        storage.close()


def test_postgres_pool_holds_at_most_the_connections_asked_for(postgres_url: str) -> None:
    """Two batches held open in their transactions: a third waits for one of their connections."""
    import threading

    import psycopg

    from deniable.aggregator.storage.postgres import PostgresStorage

    storage = open_storage(postgres_url, connections=2)
    assert isinstance(storage, PostgresStorage)
    entered, release = threading.Semaphore(0), threading.Event()
    steps = ReleaseSteps(first=100, step=100)  # stepped: the tally runs inside the transaction

    def held(rid: str) -> Submission:
        batch = submission([report(rid, 1)], steps)

        def tally(keep: object) -> list[int]:
            entered.release()
            release.wait(timeout=60)
            return [1]

        return replace(batch, groups=[replace(batch.groups[0], tally=tally)])

    try:
        storage.create_survey(survey())
        threads = [
            threading.Thread(target=storage.submit, args=(held(rid),)) for rid in ("a", "b", "c")
        ]
        for thread in threads[:2]:
            thread.start()
        for _ in range(2):
            assert entered.acquire(timeout=60)
        threads[2].start()
        for _ in range(600):  # bounded: until the third batch waits for a connection
            if storage._pool.get_stats().get("requests_waiting", 0) == 1:
                break
            threading.Event().wait(0.05)
        assert storage._pool.get_stats().get("requests_waiting", 0) == 1
        with psycopg.connect(postgres_url) as admin:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert row is not None
        assert row[0] == 2
        release.set()
        for thread in threads:
            thread.join(timeout=60)
        assert storage.tally("s1", "q1") == Tally(3, (3,))
    finally:
        release.set()
        storage.close()


def test_postgres_prepares_the_batch_statement_at_its_first_use(postgres_url: str) -> None:
    from deniable.aggregator.storage.postgres import PostgresStorage

    storage = open_storage(postgres_url, connections=1)
    assert isinstance(storage, PostgresStorage)
    try:
        storage.create_survey(survey())
        assert submit(storage, [report("a", 1), report("b", 0)]).stored == 2
        with storage._pool.connection() as db:  # the one pooled connection
            prepared = [
                str(row[0]) for row in db.execute("SELECT statement FROM pg_prepared_statements")
            ]
        assert any("INSERT INTO report_ids" in statement for statement in prepared), prepared
    finally:
        storage.close()


# --- max_reports: refused whole, in the commit, never passed ---


def capped(reports: list[pb.Report], cap: int) -> Submission:
    """The submission of these reports, for a survey with ``max_reports`` = ``cap``."""
    plain = submission(reports)
    return replace(plain, groups=[replace(g, max_reports=cap) for g in plain.groups])


def numbered(prefix: str, count: int, question: str = "q1") -> list[pb.Report]:
    return [report(f"{prefix}-{i}", i % 2, question) for i in range(count)]


def stored_in_s1(storage: Storage) -> int:
    found = storage.get_survey("s1")
    assert found is not None
    return int(found.reports)


def test_a_batch_that_would_pass_max_reports_is_refused_whole(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    assert storage.submit(capped(numbered("a", 6), 10)) == SubmitOutcome(6, 0)
    # Two questions' reports count together: 3 + 2 new would make 11.
    over = numbered("b", 3) + numbered("c", 2, "q2")
    with pytest.raises(FailedPrecondition) as refused:
        storage.submit(capped(over, 10))
    assert refused.value.message == (
        "reports[0]: survey 's1' is full: its 5 new report(s) in this batch would take it "
        "past its max_reports of 10; nothing stored"
    )
    assert stored_in_s1(storage) == 6
    assert len(logged(storage)) == 6
    assert storage.tally("s1", "q2") == recount(storage, "s1", "q2")
    assert storage.submit(capped(numbered("b", 4), 10)) == SubmitOutcome(4, 0)  # exactly full
    assert stored_in_s1(storage) == 10


def test_a_resend_is_acknowledged_when_the_survey_is_full(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    first = numbered("a", 5)
    assert storage.submit(capped(first, 5)) == SubmitOutcome(5, 0)
    assert storage.submit(capped(first, 5)) == SubmitOutcome(0, 5)  # idempotency first
    # A resend with one new report is refused whole: nothing of it is stored.
    with pytest.raises(FailedPrecondition, match="its 1 new report"):
        storage.submit(capped([*first, report("new", 1)], 5))
    assert stored_in_s1(storage) == 5
    assert [r.report_id for r in logged(storage)] == [r.report_id for r in first]


def test_an_uncapped_survey_beside_a_capped_one_is_not_held(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    storage.create_survey(survey("s2", ("q1",)))
    assert storage.submit(capped(numbered("a", 3), 3)) == SubmitOutcome(3, 0)
    other = [report(f"o-{i}", 1, "q1", "s2") for i in range(50)]
    assert storage.submit(submission(other)) == SubmitOutcome(50, 0)


def test_concurrent_batches_never_pass_max_reports(opener: Opener) -> None:
    storage = opener()
    storage.create_survey(survey())
    cap, size, batches = 100, 7, 40

    def send(k: int) -> int:
        try:
            return storage.submit(capped(numbered(f"t{k}", size), cap)).stored
        except FailedPrecondition:
            return 0

    with ThreadPoolExecutor(8) as pool:
        stored = list(pool.map(send, range(batches), timeout=HANG_GUARD))
    assert sum(stored) == stored_in_s1(storage) == 98  # 14 batches of 7; a 15th would pass 100
    assert storage.tally("s1", "q1") == recount(storage, "s1", "q1")


def test_two_daemons_sharing_a_database_never_pass_max_reports(durable_url: str) -> None:
    if not durable_url.startswith("postgresql"):
        pytest.skip("one SQLite database serves one process (its lock file)")
    first, second = open_storage(durable_url), open_storage(durable_url)
    try:
        first.create_survey(survey())
        cap, size, batches = 50, 3, 40

        def send(k: int) -> int:
            storage = first if k % 2 else second
            try:
                return storage.submit(capped(numbered(f"d{k}", size), cap)).stored
            except FailedPrecondition:
                return 0

        with ThreadPoolExecutor(8) as pool:
            stored = list(pool.map(send, range(batches), timeout=HANG_GUARD))
        assert sum(stored) == stored_in_s1(first) == 48
    finally:
        first.close()
        second.close()
