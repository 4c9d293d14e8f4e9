"""The old file-keyed ledger: read it, move a data file's budget to a dataset once, refuse again."""

from __future__ import annotations

import hashlib
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import (
    CustodianLedger,
    SpendEntry,
    legacy_budget,
    legacy_ledger_path,
    migrate_legacy,
    needs_migration,
)
from tests.aggregator.central.curator.ledger._old_ledger import Ledger, default_ledger_path

DIGEST = hashlib.sha256(b"name,hiv\nbob,yes\n").hexdigest()
OTHER = "cd" * 32


@pytest.fixture
def old(tmp_path: Path) -> Path:
    """An old ledger with 0.1, 0.1, 0.1, 0.25 spent of 1.0 on DIGEST, and 0.5 of 2 on OTHER."""
    path = tmp_path / "old" / "curator-ledger.sqlite"
    ledger = Ledger(path)
    for eps, query in ((0.1, "count"), (0.1, "count where x"), (0.1, "sum"), (0.25, "mean")):
        ledger.spend(DIGEST, eps, query, budget=1.0)
    ledger.spend(OTHER, 0.5, "count", budget=2.0)
    return path


def test_the_old_default_path_is_the_old_ledgers() -> None:
    assert legacy_ledger_path() == default_ledger_path()


def test_the_old_budget_is_read_exactly_and_read_only(old: Path, tmp_path: Path) -> None:
    before = old.read_bytes()
    found = legacy_budget(old, DIGEST)
    assert found is not None
    total, spends = found
    assert total == 1
    assert [(s.analyst, s.query, s.epsilon, s.delta) for s in spends] == [
        ("custodian", "count", Fraction(1, 10), Fraction(0)),
        ("custodian", "count where x", Fraction(1, 10), Fraction(0)),
        ("custodian", "sum", Fraction(1, 10), Fraction(0)),
        ("custodian", "mean", Fraction(1, 4), Fraction(0)),
    ]
    assert old.read_bytes() == before
    assert legacy_budget(old, "ef" * 32) is None
    assert legacy_budget(tmp_path / "missing.sqlite", DIGEST) is None
    assert not (tmp_path / "missing.sqlite").exists()
    assert not needs_migration(tmp_path / "missing.sqlite", DIGEST)


def test_a_budget_moves_once_with_its_spends(old: Path, ledger: CustodianLedger) -> None:
    assert needs_migration(old, DIGEST)
    found = legacy_budget(old, DIGEST)
    assert found is not None
    result = migrate_legacy(old, DIGEST, ledger, "clinic")
    assert (result.dataset, result.total, result.spends, result.spent) == (
        "clinic",
        Fraction(1),
        4,
        Fraction(11, 20),
    )
    assert result.registered
    dataset = ledger.dataset("clinic")
    assert dataset is not None
    assert (dataset.epsilon, dataset.delta) == (Fraction(1), Fraction(0))
    balance = ledger.balance("clinic", "custodian")
    assert balance.spends == tuple(found[1])  # same times, queries and ε
    assert ledger.balance("clinic").spent_epsilon == Fraction(11, 20)
    assert not needs_migration(old, DIGEST)
    assert needs_migration(old, OTHER)
    for dataset_name in ("clinic", "elsewhere"):
        with pytest.raises(CuratorError) as refused:
            migrate_legacy(old, DIGEST, ledger, dataset_name)
        assert str(refused.value) == (
            f"{old}: the budget of the data file with SHA-256 {DIGEST} was already moved "
            "to dataset 'clinic'; its spends count there"
        )
    assert ledger.balance("clinic").spent_epsilon == Fraction(11, 20)
    assert ledger.dataset("elsewhere") is None
    # The old ledger's own tables are as they were; the new one marks the move.
    with sqlite3.connect(old) as db:
        assert db.execute("SELECT digest, dataset FROM migrated").fetchall() == [(DIGEST, "clinic")]
    assert Ledger(old).budget(DIGEST) is not None  # the old class still reads its file


def test_into_a_registered_dataset_with_room_the_spends_add_up(
    old: Path, ledger: CustodianLedger
) -> None:
    ledger.register("clinic", Fraction(3), Fraction(0), description="registered first")
    ledger.spend("clinic", "custodian", Fraction(2), Fraction(0), "count")
    result = migrate_legacy(old, DIGEST, ledger, "clinic")
    assert not result.registered
    assert result.balance.spent_epsilon == Fraction(2) + Fraction(11, 20)
    assert result.balance.left_epsilon == Fraction(9, 20)


def test_into_a_dataset_with_too_little_left_nothing_moves(
    old: Path, ledger: CustodianLedger
) -> None:
    ledger.register("clinic", Fraction(1, 2), Fraction(0), description="smaller")
    with pytest.raises(CuratorError) as refused:
        migrate_legacy(old, DIGEST, ledger, "clinic")
    assert str(refused.value) == (
        f"--dataset: 'clinic' has ε=0.5 left, less than the ε=0.55 the old ledger {old} "
        "spent on this data file: nothing was moved (register the data under another name)"
    )
    assert ledger.balance("clinic").spends == ()
    assert needs_migration(old, DIGEST)


def test_a_move_cut_off_before_marking_the_old_file_is_not_repeated(
    old: Path, ledger: CustodianLedger
) -> None:
    migrate_legacy(old, DIGEST, ledger, "clinic")
    with sqlite3.connect(old) as db:  # as if the process died before marking the old file
        db.execute("DELETE FROM migrated")
    assert needs_migration(old, DIGEST)
    with pytest.raises(CuratorError, match="was already moved to dataset 'clinic'"):
        migrate_legacy(old, DIGEST, ledger, "other")
    assert not needs_migration(old, DIGEST)  # marked now
    assert ledger.balance("clinic").spent_epsilon == Fraction(11, 20)  # counted once
    assert ledger.dataset("other") is None


def test_missing_files_and_budgets_are_named(
    old: Path, tmp_path: Path, ledger: CustodianLedger
) -> None:
    with pytest.raises(CuratorError, match="no old curator ledger there"):
        migrate_legacy(tmp_path / "nope.sqlite", DIGEST, ledger, "clinic")
    with pytest.raises(
        CuratorError, match=f"holds no budget for the data file with SHA-256 {'ef' * 32}"
    ):
        migrate_legacy(old, "ef" * 32, ledger, "clinic")
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database " * 100)
    with pytest.raises(CuratorError, match="not a usable old curator ledger"):
        migrate_legacy(junk, DIGEST, ledger, "clinic")
    with pytest.raises(CuratorError, match="not a readable old curator ledger"):
        legacy_budget(junk, DIGEST)


def test_spend_entries_compare_by_value() -> None:
    assert SpendEntry(1.0, "custodian", "q", Fraction(1, 10), Fraction(0)) == SpendEntry(
        1.0, "custodian", "q", Fraction(1, 10), Fraction(0)
    )
