"""The old file-keyed ledger (before issue 36), kept to build old ledger files for the tests."""

from __future__ import annotations

import math
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator._noise import check_curator_epsilon, exact_epsilon

__all__ = ["BudgetExceededError", "Ledger", "Spend", "default_ledger_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    digest TEXT PRIMARY KEY,
    total TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    digest TEXT NOT NULL REFERENCES budgets(digest),
    at REAL NOT NULL,
    query TEXT NOT NULL,
    epsilon TEXT NOT NULL
);
"""


def default_ledger_path() -> Path:
    """``$XDG_DATA_HOME/deniable/curator-ledger.sqlite`` (``~/.local/share`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deniable" / "curator-ledger.sqlite"


class BudgetExceededError(CuratorError):
    """A query that would spend more than the data set's budget left: nothing was spent."""


@dataclass(frozen=True)
class Spend:
    """One entry of the ledger: when, which query, how much ε."""

    at: float
    query: str
    epsilon: float


@dataclass(frozen=True)
class Budget:
    """A data set's budget: the total, what was spent, and each spend."""

    digest: str
    total: float
    spent: float
    spends: tuple[Spend, ...]

    @property
    def spent_exactly(self) -> Fraction:
        """Σ spends, exactly (each ε the decimal it was written as)."""
        return sum((exact_epsilon(s.epsilon) for s in self.spends), Fraction(0))

    @property
    def remaining(self) -> float:
        """What is left, total − Σ spends computed exactly, then rounded to a float once."""
        return float(exact_epsilon(self.total) - self.spent_exactly)


class Ledger:
    """The ledger file: every spend is one ``BEGIN IMMEDIATE`` transaction (no overspend)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise CuratorError(f"--ledger: cannot open {self.path} ({error})") from None
        with closing(connection):
            try:
                connection.executescript(_SCHEMA)
                yield connection
            except sqlite3.DatabaseError as error:
                raise CuratorError(
                    f"--ledger: {self.path} is not a usable ledger ({error})"
                ) from None

    def budget(self, digest: str) -> Budget | None:
        """The data set's budget and spends, or None if it has none yet (no file is created)."""
        if not self.path.exists():
            return None
        with self._connect() as db:
            return _read(db, digest)

    def spend(self, digest: str, epsilon: float, query: str, budget: float | None) -> Budget:
        """Record a spend of ``epsilon`` if the budget allows it; the budget after it.

        ``budget`` sets the data set's total on its first query and must match it after
        (a budget cannot be raised). The check and the insert are one ``BEGIN IMMEDIATE``
        transaction, so two processes cannot both spend the last of it. Call this BEFORE
        drawing any noise: a refusal leaves the ledger as it was.

        Raises:
            BudgetExceededError: the spend would exceed the total (nothing recorded).
            CuratorError: no budget set and none given, or a different one given.
        """
        eps = check_curator_epsilon(epsilon)
        if budget is not None and not 0 < budget < math.inf:  # also refuses NaN
            raise CuratorError(f"--budget must be a finite number > 0, got {budget!r}")
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                current = _read(db, digest)
                if current is None:
                    if budget is None:
                        raise CuratorError(
                            "no privacy budget is set for this data set: give --budget E "
                            "(the total ε all its queries may spend)"
                        )
                    db.execute("INSERT INTO budgets VALUES (?, ?)", (digest, repr(float(budget))))
                elif budget is not None and float(budget) != current.total:
                    raise CuratorError(
                        f"--budget {budget!r} differs from this data set's budget "
                        f"{current.total!r}, set by its first query (a budget cannot change)"
                    )
                total = exact_epsilon(current.total if current else float(budget or 0))
                spent = Fraction(0) if current is None else current.spent_exactly
                if spent + exact_epsilon(eps) > total:
                    raise BudgetExceededError(
                        f"epsilon {eps!r} would overspend the budget: {float(total):g} total, "
                        f"{float(spent):g} spent, {float(total - spent):g} left; nothing was spent"
                    )
                db.execute(
                    "INSERT INTO spends (digest, at, query, epsilon) VALUES (?, ?, ?, ?)",
                    (digest, time.time(), query, repr(eps)),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            after = _read(db, digest)
        assert after is not None
        return after


def _read(db: sqlite3.Connection, digest: str) -> Budget | None:
    row = db.execute("SELECT total FROM budgets WHERE digest = ?", (digest,)).fetchone()
    if row is None:
        return None
    spends = tuple(
        Spend(at, query, float(eps))
        for at, query, eps in db.execute(
            "SELECT at, query, epsilon FROM spends WHERE digest = ? ORDER BY id", (digest,)
        )
    )
    spent = float(sum((exact_epsilon(s.epsilon) for s in spends), Fraction(0)))
    return Budget(digest, float(row[0]), spent, spends)
