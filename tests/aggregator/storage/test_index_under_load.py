"""Exactly once under load: concurrent submitters and background maintenance, then a resend.

Small filters and segments make the background thread grow filters and seal segments
many times while batches commit; every acknowledged batch is then resent unchanged, and
each must come back already stored, and ``check`` must find every id once in the log.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.storage import open_reader
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite.index import _survey_ids
from deniable.aggregator.storage.sqlite.index._filter import BloomFilter
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.storage.test_storage_contract import report, submit, survey

SURVEYS = 2
THREADS = 4
BATCHES = 150  # per thread
WAIT = 120.0  # seconds: a bound on a hang, never reached when the code works


def test_acknowledged_reports_stay_stored_once_under_concurrent_maintenance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_survey_ids, "INITIAL_CAPACITY", 4096)  # grows at 4096, 8192, ...
    path = tmp_path / "load.db"
    storage = SqliteStorage(str(path), segment_ids=3000)  # background thread on
    names = [f"s{i}" for i in range(SURVEYS)]
    for name in names:
        storage.create_survey(survey(name, ("q1",)))
    acknowledged: list[list[pb.Report]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def submitter(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(BATCHES):
                name = rng.choice(names)
                size = rng.choice((1, 2, 5, 50, 300))
                reports = [
                    report(secrets.token_hex(16), rng.getrandbits(1), "q1", name)
                    for _ in range(size)
                ]
                outcome = submit(storage, reports)
                assert (outcome.stored, outcome.already_stored) == (size, 0)
                with lock:
                    acknowledged.append(reports)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=submitter, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert errors == []
    try:
        stored_again = sum(submit(storage, reports).stored for reports in acknowledged)
        assert stored_again == 0, f"{stored_again} acknowledged reports were stored twice"
        expected = sum(len(reports) for reports in acknowledged)
        tallies = [storage.tally(name, "q1") for name in names]
        assert sum(tally.n for tally in tallies if tally is not None) == expected
    finally:
        storage.close()
    with open_reader(f"sqlite:///{path}") as reader, reader.snapshot():
        outcome = check(reader)
    assert outcome.ok, outcome.mismatches()


def test_a_batch_committed_while_a_filter_is_rebuilt_stays_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background thread is preempted halfway through adding ids to a new filter.

    Its add reads the filter's words, and before it writes them back a batch commits.
    That batch must still be found afterwards: its resend is already stored.
    """
    monkeypatch.setattr(_survey_ids, "INITIAL_CAPACITY", 64)
    paused, resume = threading.Event(), threading.Event()
    armed = [True]
    add_slots = BloomFilter.add_slots

    def preempted_add_slots(
        self: BloomFilter, index: NDArray[np.uint64], pattern: NDArray[np.uint64]
    ) -> None:
        if not (armed[0] and threading.current_thread().name == "deniable-storage"):
            add_slots(self, index, pattern)
            return
        armed[0] = False
        merged = self.words.take(index)  # what the thread read ...
        np.bitwise_or(merged, pattern, out=merged)
        paused.set()
        assert resume.wait(WAIT)
        self.words[index] = merged  # ... and writes back after the batch's commit
        np.bitwise_or.at(self.words, index.astype(np.intp), pattern)  # its own bits, all
        self.count += len(index)

    monkeypatch.setattr(BloomFilter, "add_slots", preempted_add_slots)
    path = tmp_path / "x.db"
    storage = SqliteStorage(str(path), segment_ids=10**6)
    try:
        storage.create_survey(survey("s1", ("q1",)))
        first = [report(secrets.token_hex(16), 1, "q1") for _ in range(100)]
        assert submit(storage, first).stored == 100  # past capacity: the thread grows it
        assert paused.wait(WAIT)
        during = [report(secrets.token_hex(16), 0, "q1") for _ in range(50)]
        assert submit(storage, during).stored == 50
        resume.set()
        ids = storage._index.surveys["s1"]
        deadline = time.monotonic() + WAIT
        while ids.bloom.capacity == 64:  # until the new filter is in place
            assert time.monotonic() < deadline
            time.sleep(0.01)
        again = submit(storage, during)
        assert (again.stored, again.already_stored) == (0, 50)
        assert submit(storage, first).already_stored == 100
    finally:
        resume.set()
        storage.close()
    with open_reader(f"sqlite:///{path}") as reader, reader.snapshot():
        assert check(reader).ok
