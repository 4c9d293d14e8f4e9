"""The old file-keyed ledger (ε per data file's SHA-256): read it, and move a budget over once."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._api import CustodianLedger
from deniable.aggregator.central.curator.ledger._model import (
    CUSTODIAN,
    AlreadyImportedError,
    Balance,
    SpendEntry,
    shown,
)
from deniable.aggregator.storage import data_dir

__all__ = [
    "MigrationResult",
    "legacy_budget",
    "legacy_ledger_path",
    "migrate_legacy",
    "needs_migration",
]

_MIGRATED = (
    "CREATE TABLE IF NOT EXISTS migrated "
    "(digest TEXT PRIMARY KEY, dataset TEXT NOT NULL, at REAL NOT NULL)"
)


@dataclass(frozen=True)
class MigrationResult:
    """A budget moved from the old ledger: where to, its total, and the spends copied."""

    dataset: str
    digest: str
    total: Fraction
    spends: int
    spent: Fraction
    registered: bool  # True: the migration registered the dataset with the old total
    balance: Balance  # the dataset's balance after the move


def legacy_ledger_path() -> Path:
    """Where the old ledger was by default: ``$XDG_DATA_HOME/deniable/curator-ledger.sqlite``."""
    return data_dir() / "curator-ledger.sqlite"


def legacy_budget(path: Path, digest: str) -> tuple[Fraction, list[SpendEntry]] | None:
    """The old ledger's total and spends of a data file (read only), or None if it has none.

    The spends are the custodian's, δ = 0, each ε the decimal the old ledger wrote.
    """
    if not Path(path).exists():
        return None
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return _read(db, digest)
    except sqlite3.Error as error:
        raise CuratorError(f"{path}: not a readable old curator ledger ({error})") from None


def needs_migration(old_path: Path, digest: str) -> bool:
    """Whether the old ledger holds spends or a budget of this data file not yet moved."""
    if legacy_budget(old_path, digest) is None:
        return False
    uri = Path(old_path).resolve().as_uri() + "?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            return _moved_to(db, digest) is None
    except sqlite3.Error as error:
        raise CuratorError(f"{old_path}: not a readable old curator ledger ({error})") from None


def migrate_legacy(
    old_path: Path, digest: str, ledger: CustodianLedger, dataset: str
) -> MigrationResult:
    """Move a data file's budget from the old ledger to ``dataset`` in the custodian's ledger.

    Registers the dataset with the old total (δ = 0) unless it is registered; copies the
    old spends as the custodian's (same times, queries and ε) in one transaction; then
    marks the digest as moved in the old file (table ``migrated``). The old file stays
    locked (``BEGIN IMMEDIATE``) throughout, so nothing is spent there meanwhile.

    Raises:
        CuratorError: no such old ledger or budget; moved before (naming the dataset); the
            dataset registered with less left than the old ledger spent.
    """
    old = Path(old_path)
    if not old.exists():
        raise CuratorError(f"{old}: no old curator ledger there")
    same = getattr(ledger, "path", None)  # a SqliteLedger's file
    if isinstance(same, str) and same != ":memory:" and Path(same).resolve() == old.resolve():
        raise CuratorError(f"{old}: the old ledger cannot be moved into itself; use --db")
    try:
        db = sqlite3.connect(old, timeout=60, isolation_level=None)
    except sqlite3.Error as error:
        raise CuratorError(f"{old}: cannot open the old curator ledger ({error})") from None
    with closing(db):
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute(_MIGRATED)
            result = _move(db, old, digest, ledger, dataset)
            db.execute("COMMIT")
        except sqlite3.Error as error:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise CuratorError(f"{old}: not a usable old curator ledger ({error})") from None
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return result


def _move(
    db: sqlite3.Connection, old: Path, digest: str, ledger: CustodianLedger, dataset: str
) -> MigrationResult:
    moved = _moved_to(db, digest)
    if moved is not None:
        raise CuratorError(_already(old, digest, moved))
    found = _read(db, digest)
    if found is None:
        raise CuratorError(f"{old}: holds no budget for the data file with SHA-256 {digest}")
    total, spends = found
    spent = sum((s.epsilon for s in spends), Fraction(0))
    registered = ledger.dataset(dataset) is None
    if not registered:
        left = ledger.balance(dataset).dataset_left_epsilon
        if left < spent:
            raise CuratorError(
                f"--dataset: {dataset!r} has ε={shown(left)} left, less than the "
                f"ε={shown(spent)} the old ledger {old} spent on this data file: "
                "nothing was moved (register the data under another name)"
            )
    try:
        balance = ledger.import_spends(
            dataset,
            spends,
            source=f"old ledger, data {digest}",
            register=(total, Fraction(0), f"moved from {old} (data SHA-256 {digest})"),
        )
    except AlreadyImportedError as error:
        # Moved before, but the old file was not marked (a crash in between): mark it now.
        db.execute("INSERT INTO migrated VALUES (?, ?, ?)", (digest, error.dataset, time.time()))
        db.execute("COMMIT")
        raise CuratorError(_already(old, digest, error.dataset)) from None
    db.execute("INSERT INTO migrated VALUES (?, ?, ?)", (digest, dataset, time.time()))
    return MigrationResult(dataset, digest, total, len(spends), spent, registered, balance)


def _already(old: Path, digest: str, dataset: str) -> str:
    return (
        f"{old}: the budget of the data file with SHA-256 {digest} was already moved to "
        f"dataset {dataset!r}; its spends count there"
    )


def _moved_to(db: sqlite3.Connection, digest: str) -> str | None:
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrated'"
    ).fetchone()
    if exists is None:
        return None
    row = db.execute("SELECT dataset FROM migrated WHERE digest = ?", (digest,)).fetchone()
    return None if row is None else str(row[0])


def _read(db: sqlite3.Connection, digest: str) -> tuple[Fraction, list[SpendEntry]] | None:
    row = db.execute("SELECT total FROM budgets WHERE digest = ?", (digest,)).fetchone()
    if row is None:
        return None
    spends = [
        SpendEntry(float(at), CUSTODIAN, str(query), Fraction(str(eps)), Fraction(0))
        for at, query, eps in db.execute(
            "SELECT at, query, epsilon FROM spends WHERE digest = ? ORDER BY id", (digest,)
        )
    ]
    return Fraction(str(row[0])), spends
