"""The SQLite storage's report-id index against a plain set, under every interleaving.

A hypothesis state machine submits batches (new ids, exact resends, conflicting resends,
batches whose commit fails) to two surveys, and interleaves them with the background
jobs' three steps (take, build, install: sealing a segment and growing a filter), with
restarts and with crashes (the database's files copied as they stand, and opened
without closing anything). Filters and segments are tiny, so each run seals and grows
many times; some runs give every id one of four fingerprints, so nearly every lookup
goes to the log. After every step the tallies agree with the model; at the end every
id is resent (all already stored) and ``check`` passes.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.storage import SubmitOutcome, open_reader
from deniable.aggregator.storage.codec import Hasher
from deniable.aggregator.storage.sqlite import SqliteStorage
from deniable.aggregator.storage.sqlite import _storage as _sqlite
from deniable.aggregator.storage.sqlite.index import Maintenance, _survey_ids
from deniable.aggregator.storage.sqlite.index._jobs import Growth, Seal
from deniable.shared.errors import AlreadyExists
from tests.aggregator.storage.test_id_index import FailingCommit
from tests.aggregator.storage.test_storage_contract import report, submission, submit, survey

SURVEYS = ("s1", "s2")
UNIVERSE = 90  # ids are drawn from a small set, so resends and conflicts are frequent
SEGMENT_IDS = 11

batches = st.lists(
    st.tuples(st.integers(0, UNIVERSE - 1), st.integers(0, 1)),
    min_size=1,
    max_size=24,
    unique_by=lambda pair: pair[0],
)


def _id(number: int) -> str:
    return f"{number * 2654435761 % 2**32:08x}{number:024x}"  # 32 hex digits, distinct


class IdIndexMachine(RuleBasedStateMachine):
    """A storage and the model of what it holds: per survey, each stored id's bit."""

    def __init__(self) -> None:
        super().__init__()
        memory = "/dev/shm" if Path("/dev/shm").is_dir() else None  # fsync costs nothing
        self.folder = Path(tempfile.mkdtemp(prefix="id-index-model-", dir=memory))
        self.generation = 0
        self.model: dict[str, dict[int, int]] = {name: {} for name in SURVEYS}
        self.job: Seal | Growth | None = None
        self.built = False
        self.patches = ExitStack()
        # The state machine decides when background work runs, step by step.
        self.patches.enter_context(mock.patch.object(Maintenance, "after_commit", _idle))
        self.patches.enter_context(mock.patch.object(_survey_ids, "INITIAL_CAPACITY", 64))
        # Zero-filling the write-ahead log (a speed measure) would make each open and each
        # crash copy megabytes.
        self.patches.enter_context(mock.patch.object(_sqlite, "preallocate_wal", _no_fill))
        self.storage: SqliteStorage | None = None

    @initialize(weak=st.booleans())
    def open_first(self, weak: bool) -> None:
        if weak:  # four fingerprints for every id: matches everywhere, ids still decide
            self.patches.enter_context(mock.patch.object(Hasher, "__call__", _weak))
        self.storage = self._open(self._path())
        for name in SURVEYS:
            self.storage.create_survey(survey(name, ("q1",)))

    def _path(self) -> Path:
        return self.folder / f"db{self.generation}.sqlite"

    def _open(self, path: Path) -> SqliteStorage:
        return SqliteStorage(str(path), segment_ids=SEGMENT_IDS, background=False)

    @property
    def open(self) -> SqliteStorage:
        assert self.storage is not None
        return self.storage

    # --- batches ------------------------------------------------------------------------

    @rule(name=st.sampled_from(SURVEYS), batch=batches)
    def submit(self, name: str, batch: list[tuple[int, int]]) -> None:
        held = self.model[name]
        conflict = any(number in held and held[number] != bit for number, bit in batch)
        reports = [report(_id(number), bit, "q1", name) for number, bit in batch]
        if conflict:
            with pytest.raises(AlreadyExists):
                submit(self.open, reports)
            return
        new = sum(number not in held for number, _ in batch)
        outcome = submit(self.open, reports)
        assert (outcome.stored, outcome.already_stored) == (new, len(batch) - new)
        held.update(batch)

    @rule(group=st.lists(st.tuples(st.sampled_from(SURVEYS), batches), min_size=2, max_size=4))
    def submit_group(self, group: list[tuple[str, list[tuple[int, int]]]]) -> None:
        """Batches committed together: each as if committed alone, in order."""
        submissions = [
            submission([report(_id(number), bit, "q1", name) for number, bit in batch])
            for name, batch in group
        ]
        with self.open._lock:
            outcomes = self.open._commit_locked(submissions)
        for (name, batch), outcome in zip(group, outcomes, strict=True):
            held = self.model[name]
            if any(number in held and held[number] != bit for number, bit in batch):
                assert isinstance(outcome, AlreadyExists)
                continue
            new = sum(number not in held for number, _ in batch)
            assert outcome == SubmitOutcome(new, len(batch) - new)
            held.update(batch)

    @rule(name=st.sampled_from(SURVEYS), batch=batches)
    def submit_failing(self, name: str, batch: list[tuple[int, int]]) -> None:
        """A batch whose COMMIT fails (disk full): nothing of it is stored or remembered."""
        reports = [report(_id(number), bit, "q1", name) for number, bit in batch]
        storage = self.open
        real = storage._db
        storage._db = FailingCommit(real)  # type: ignore[assignment]
        try:
            with pytest.raises((sqlite3.OperationalError, AlreadyExists)):
                submit(storage, reports)
        finally:
            storage._db = real

    # --- background jobs, one at a time, in steps ---------------------------------------

    @precondition(lambda self: self.job is None)
    @rule(name=st.sampled_from(SURVEYS), kind=st.sampled_from(["seal", "grow"]))
    def take_job(self, name: str, kind: str) -> None:
        maintenance = self.open._maintenance
        self.job = maintenance.seal(name) if kind == "seal" else maintenance.grow(name)
        self.built = False

    @precondition(lambda self: self.job is not None and not self.built)
    @rule()
    def build_job(self) -> None:
        assert self.job is not None
        self.open._maintenance.build(self.job)
        self.built = True

    @precondition(lambda self: self.job is not None and self.built)
    @rule()
    def install_job(self) -> None:
        assert self.job is not None
        self.open._maintenance.install(self.job)
        self.job = None

    # --- restarts and crashes -----------------------------------------------------------

    @rule()
    def restart(self) -> None:
        self.open.close()
        self.job = None
        self.storage = self._open(self._path())

    @rule()
    def crash(self) -> None:
        """Copy the files as a power cut would leave them, and open the copy."""
        old = self._path()
        self.generation += 1
        new = self._path()
        for suffix in ("", "-wal"):
            if Path(f"{old}{suffix}").exists():
                shutil.copyfile(f"{old}{suffix}", f"{new}{suffix}")
        abandoned = self.open
        self.job = None
        self.storage = self._open(new)
        abandoned.close()  # frees the lock of the old files, which are never read again

    # --- what must always hold ----------------------------------------------------------

    @invariant()
    def tallies_match_the_model(self) -> None:
        if self.storage is None:
            return
        for name in SURVEYS:
            tally = self.storage.tally(name, "q1")
            held = self.model[name]
            assert tally is not None
            assert (tally.n, tally.ones) == (len(held), sum(held.values()))

    @invariant()
    def every_stored_id_is_found(self) -> None:
        """The index has no false negative: each stored id leads to a log row to read."""
        if self.storage is None:
            return
        index = self.storage._index
        for name in SURVEYS:
            numbers = sorted(self.model[name])
            if not numbers:
                continue
            ids = np.frombuffer(b"".join(_id(n).encode() for n in numbers), np.uint8)
            prints = index.hasher(ids.reshape(len(numbers), -1))
            found, _ = index.surveys[name].locate(self.storage._db, prints)
            assert sorted(found) == list(range(len(numbers)))

    def teardown(self) -> None:
        try:
            if self.storage is not None:
                for name in SURVEYS:
                    held = sorted(self.model[name].items())
                    if held:
                        reports = [report(_id(n), bit, "q1", name) for n, bit in held]
                        assert submit(self.storage, reports).stored == 0
                self.storage.close()
                with open_reader(f"sqlite:///{self._path()}") as reader, reader.snapshot():
                    outcome = check(reader)
                assert outcome.ok, outcome.mismatches()
        finally:
            self.patches.close()
            shutil.rmtree(self.folder, ignore_errors=True)


def _no_fill(path: str, size: int) -> None:
    """No zero-filled write-ahead log."""


def _idle(self: Maintenance) -> None:
    """No background work on its own: the state machine runs each step."""


def _weak(self: Hasher, ids: Any) -> Any:
    return np.asarray(ids[:, -1] % 4, dtype=np.uint64)


TestIdIndexModel = IdIndexMachine.TestCase
TestIdIndexModel.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_the_machine_reaches_seals_growth_and_crashes() -> None:
    """The rules are reachable: a fixed run seals, grows and crashes, and stays exact."""
    machine = IdIndexMachine()
    try:
        machine.open_first(weak=False)
        for start in range(0, 60, 20):
            machine.submit("s1", [(n, n % 2) for n in range(start, start + 20)])
        for kind, new in (("seal", range(60, 65)), ("grow", range(65, 70))):
            machine.take_job("s1", kind)
            machine.submit("s1", [(n, n % 2) for n in range(0, 30)])  # resends meanwhile
            machine.build_job()
            machine.submit("s1", [(n, n % 2) for n in new])  # and new ids
            machine.submit("s2", [(n, 1) for n in range(0, 10)])
            machine.install_job()
            machine.tallies_match_the_model()
            machine.every_stored_id_is_found()
        ids = machine.open._index.surveys["s1"]
        assert len(ids.segments) == 1
        assert ids.bloom.capacity > 64
        machine.crash()
        machine.submit("s1", [(n, n % 2) for n in range(60, UNIVERSE)])
        machine.tallies_match_the_model()
    finally:
        machine.teardown()
