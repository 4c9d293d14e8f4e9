"""Group commit: concurrent batches share a commit, and each gets its own result or error."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from deniable.aggregator.server._enrollment import token_hash
from deniable.aggregator.storage import Submission, SubmitOutcome, Tally, open_storage
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite._committer import Committer, CommitterClosedError
from deniable.aggregator.storage.sqlite.index import GroupClaim, IdIndex
from deniable.shared.errors import AlreadyExists
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import (
    enrolled,
    logged,
    recount,
    report,
    submission,
    submit,
    survey,
)

WAIT = 30.0  # seconds; a bound on a hang, never reached when the code works


class Recorder:
    """A commit function that records its groups; the first call waits for a signal."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, items: Sequence[int]) -> list[int | BaseException]:
        self.groups.append(list(items))
        if len(self.groups) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


def test_a_lone_submit_commits_at_once() -> None:
    recorder = Recorder()
    recorder.release.set()
    committer = Committer(recorder, name="test-commit")
    assert committer.submit(4).result(WAIT) == 40
    with pytest.raises(ValueError, match="odd 3"):
        committer.submit(3).result(WAIT)
    assert recorder.groups == [[4], [3]]
    committer.close()


def test_items_queued_during_a_commit_share_the_next_one() -> None:
    recorder = Recorder()
    committer = Committer(recorder, name="test-commit")
    first = committer.submit(0)
    assert recorder.entered.wait(WAIT)  # the first commit is running
    others = {item: committer.submit(item) for item in range(1, 6)}
    recorder.release.set()
    assert first.result(WAIT) == 0
    for item, future in others.items():
        if item % 2:
            with pytest.raises(ValueError, match=f"odd {item}"):
                future.result(WAIT)
        else:
            assert future.result(WAIT) == item * 10
    assert recorder.groups == [[0], [1, 2, 3, 4, 5]]  # one commit for all five, in order
    committer.close()


def test_a_lone_item_is_committed_by_its_caller_and_others_queue_meanwhile() -> None:
    threads: list[str] = []
    recorder = Recorder()

    def commit(items: Sequence[int]) -> list[int | BaseException]:
        threads.append(threading.current_thread().name)
        return recorder(items)

    committer = Committer(commit, name="test-commit")
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="caller") as pool:
        first = pool.submit(committer.submit_or_commit, 0)  # alone: the caller commits it
        assert recorder.entered.wait(WAIT)
        queued = committer.submit_or_commit(2)  # a commit is running: queued for the thread
        assert not queued.done()
        recorder.release.set()
        assert first.result(WAIT).result(0) == 0  # resolved when submit_or_commit returned
    assert queued.result(WAIT) == 20
    assert threads == ["caller_0", "test-commit"]
    committer.close()


def test_a_caller_that_gives_up_leaves_the_thread_and_its_group_working() -> None:
    # grpc.aio cancels a handler whose client went away; asyncio.wrap_future then cancels
    # the committer's future. Cancelled while queued: the item is not committed (no one was
    # acknowledged), and the others of its group are. Cancelled while its commit runs: too
    # late to withdraw, it is committed and resolved. Either way the thread goes on.
    recorder = Recorder()
    committer = Committer(recorder, name="test-commit")
    running = committer.submit(0)
    assert recorder.entered.wait(WAIT)
    withdrawn, kept = committer.submit(2), committer.submit(4)
    assert withdrawn.cancel()
    assert not running.cancel()  # its commit runs: it can no longer be withdrawn
    recorder.release.set()
    assert running.result(WAIT) == 0
    assert kept.result(WAIT) == 40
    assert committer.submit(6).result(WAIT) == 60  # the thread is alive
    assert recorder.groups == [[0], [4], [6]]
    committer.close()


def test_a_group_holds_at_most_max_weight_but_always_one_item() -> None:
    recorder = Recorder()
    committer = Committer(recorder, name="test-commit", weight=lambda item: item, max_weight=10)
    first = committer.submit(2)
    assert recorder.entered.wait(WAIT)
    futures = [committer.submit(item) for item in (4, 6, 12, 2)]
    recorder.release.set()
    assert [f.result(WAIT) for f in (first, futures[0], futures[3])] == [20, 40, 20]
    assert futures[2].result(WAIT) == 120
    assert recorder.groups == [[2], [4, 6], [12], [2]]  # 4 + 6 = 10 fits; 12 alone, over
    committer.close()


def test_a_failing_commit_fails_its_whole_group_only() -> None:
    calls: list[list[int]] = []

    def commit(items: Sequence[int]) -> list[int | BaseException]:
        calls.append(list(items))
        if len(calls) == 1:
            raise OSError("disk full")
        return list(items)

    committer = Committer(commit, name="test-commit")
    with pytest.raises(OSError, match="disk full"):
        committer.submit(1).result(WAIT)
    assert committer.submit(2).result(WAIT) == 2
    committer.close()


def test_a_wrong_number_of_results_is_an_error_for_every_item() -> None:
    committer: Committer[int, int] = Committer(lambda items: [], name="test-commit")
    with pytest.raises(RuntimeError, match="commit gave 0 results for 1 items"):
        committer.submit(1).result(WAIT)
    committer.close()


def test_closing_commits_what_is_queued_then_refuses() -> None:
    recorder = Recorder()
    committer = Committer(recorder, name="test-commit")
    first = committer.submit(0)
    assert recorder.entered.wait(WAIT)
    queued = committer.submit(2)
    closing = threading.Thread(target=committer.close)
    closing.start()
    recorder.release.set()
    closing.join(WAIT)
    assert (first.result(WAIT), queued.result(WAIT)) == (0, 20)
    with pytest.raises(CommitterClosedError):
        committer.submit(4)


def test_a_failure_after_a_commit_does_not_stop_the_thread() -> None:
    def after() -> None:
        raise OSError("checkpoint failed")

    committer: Committer[int, int] = Committer(
        lambda items: [*items], name="test-commit", after=after
    )
    assert committer.submit(1).result(WAIT) == 1
    assert committer.submit(2).result(WAIT) == 2
    committer.close()


def test_concurrent_batches_are_stored_once_each(tmp_path: Path) -> None:
    """Many threads at once, half the batches sent twice, on a file database."""
    storage = open_storage(f"sqlite:///{tmp_path / 'x.db'}")
    storage.create_survey(survey())
    batches = [[report(f"b{b}-{i}", (b + i) % 2) for i in range(50)] for b in range(12)]
    jobs = [*batches, *batches[:6]]  # the first six batches are sent twice
    start = threading.Barrier(len(jobs))

    def send(reports: list[pb.Report]) -> SubmitOutcome:
        start.wait(WAIT)
        return storage.submit(submission(reports))

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        outcomes = [future.result(WAIT) for future in [pool.submit(send, j) for j in jobs]]
    assert sum(o.stored for o in outcomes) == 12 * 50  # each report stored exactly once
    assert sum(o.already_stored for o in outcomes) == 6 * 50
    ids = [r.report_id for r in logged(storage)]
    assert sorted(ids) == sorted(r.report_id for batch in batches for r in batch)
    assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(600, (300,))
    with pytest.raises(AlreadyExists, match="'b0-0' is already stored"):
        storage.submit(submission([report("new", 1), report("b0-0", 1)]))
    assert storage.tally("s1", "q1") == Tally(600, (300,))
    storage.close()


def test_a_failing_group_releases_every_batch_in_it(tmp_path: Path) -> None:
    """Two batches claimed in one group, then the transaction fails: neither is stored."""
    storage = SqliteStorage(str(tmp_path / "x.db"))
    storage.create_survey(survey())
    first = submission([report(f"a{i}", 1) for i in range(5)])
    second = submission([report(f"b{i}", 0, "q2") for i in range(5)] + [report("a0", 1)])

    def boom(keep: object) -> list[int]:
        raise RuntimeError("disk on fire")

    broken = replace(second, groups=[replace(second.groups[0], tally=boom), *second.groups[1:]])
    with storage._lock, pytest.raises(RuntimeError, match="disk on fire"):
        storage._commit_locked([first, broken])
    assert storage.tally("s1", "q1") == Tally(0)
    assert storage.submit(first) == SubmitOutcome(stored=5, already_stored=0)
    assert storage.submit(second) == SubmitOutcome(stored=5, already_stored=1)
    for question in ("q1", "q2"):
        assert storage.tally("s1", question) == recount(storage, "s1", question)
    storage.close()


def test_batches_sharing_a_commit_each_release_at_their_own_point(tmp_path: Path) -> None:
    """Each batch of a group is held to the release the batch before it made.

    A failed group releases nothing, neither in the database nor in memory.
    """
    storage = SqliteStorage(str(tmp_path / "x.db"))
    storage.create_survey(survey())
    steps = ReleaseSteps(first=3, step=4)
    first = submission([report(f"a{i}", 1) for i in range(5)], steps)  # 5: released
    second = submission([report(f"b{i}", 0) for i in range(2)], steps)  # 7 < 5 + 4: not yet

    def boom(keep: object) -> list[int]:
        raise RuntimeError("disk on fire")

    broken = replace(second, groups=[replace(second.groups[0], tally=boom)])
    with storage._lock, pytest.raises(RuntimeError, match="disk on fire"):
        storage._commit_locked([first, broken])
    assert storage.released("s1", "q1") == Tally(0)
    with storage._lock:
        outcomes = storage._commit_locked([first, second])
    assert outcomes == [SubmitOutcome(5, 0), SubmitOutcome(2, 0)]
    assert storage.released("s1", "q1") == Tally(5, (5,))
    storage.submit(submission([report("c", 1)], steps))
    assert storage.released("s1", "q1") == Tally(5, (5,))  # 8
    storage.submit(submission([report("d", 0)], steps))
    assert storage.released("s1", "q1") == storage.tally("s1", "q1") == Tally(9, (6,))
    storage.close()


def _commit(storage: SqliteStorage, *batches: Submission) -> list[SubmitOutcome | BaseException]:
    with storage._lock:
        return storage._commit_locked(list(batches))


def test_batches_of_one_group_that_share_ids_count_each_id_once(tmp_path: Path) -> None:
    """A later batch holding an earlier one's id is a resend of it, or refused alone."""
    storage = SqliteStorage(str(tmp_path / "x.db"))
    storage.create_survey(survey())
    submit(storage, [report("old", 1)])
    first = submission([report("a", 1), report("b", 0)])
    again = submission([report("b", 0), report("c", 1)])  # b as the first batch has it
    clash = submission([report("c", 0), report("d", 1)])  # c with another bit: refused
    stale = submission([report("old", 0), report("e", 1)])  # stored with another bit
    after = submission([report("e", 1), report("d", 0)])  # e and d: the refused ones' ids
    outcomes = _commit(storage, first, again, clash, stale, after)
    assert outcomes[:2] == [SubmitOutcome(2, 0), SubmitOutcome(1, 1)]
    assert isinstance(outcomes[2], AlreadyExists)
    assert "'c' is already stored" in str(outcomes[2])
    assert isinstance(outcomes[3], AlreadyExists)
    assert outcomes[4] == SubmitOutcome(2, 0)  # the refused batches hold nothing
    assert sorted(r.report_id for r in logged(storage)) == ["a", "b", "c", "d", "e", "old"]
    assert storage.tally("s1", "q1") == recount(storage, "s1", "q1") == Tally(6, (4,))
    storage.close()


def test_a_token_batch_the_id_claim_refuses_binds_nothing_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bindings are checked before ids; if the ids then refuse a batch, its bindings go.

    (The binding check already refuses what the id claim would for an enrollment survey,
    so the claim is made to refuse the first batch here.) The second batch of the same
    token answers the same question: refused at first for the first batch's binding, it
    is checked again without it, and stored.
    """
    storage = SqliteStorage(str(tmp_path / "x.db"))
    storage.create_survey(enrolled())
    storage.issue_tokens("s1", [token_hash("t")])
    claim = IdIndex.claim

    def refuse_first(self: IdIndex, db: object, submissions: list[Submission]) -> GroupClaim:
        group = claim(self, db, submissions)  # type: ignore[arg-type]
        for place, batch in enumerate(submissions):
            if list(batch.report_ids) == [b"one"]:
                group.claims[place] = AlreadyExists("refused for its ids")
        return group

    monkeypatch.setattr(IdIndex, "claim", refuse_first)
    first = replace(submission([report("one", 0, "q1")]), token_hash=token_hash("t"))
    second = replace(submission([report("two", 1, "q1")]), token_hash=token_hash("t"))
    outcomes = _commit(storage, first, second)
    assert isinstance(outcomes[0], AlreadyExists)
    assert outcomes[1] == SubmitOutcome(1, 0)
    monkeypatch.undo()
    assert [r.report_id for r in logged(storage)] == ["two"]
    assert storage.tally("s1", "q1") == Tally(1, (1,))
    storage.close()
