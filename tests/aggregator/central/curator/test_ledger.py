"""The privacy budget ledger: sequential composition, refusal without change, no overspend."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from deniable.aggregator.central.curator import BudgetExceededError, CuratorError, Ledger

DIGEST = "ab" * 32


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def test_spends_add_up_and_a_refusal_changes_nothing(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for _ in range(10):  # ten spends of 0.1 make exactly 1 (the decimals are added exactly)
        after = ledger.spend(DIGEST, 0.1, "count", budget=1.0)
    assert after.remaining == 0.0
    assert after.spent == 1.0
    assert len(after.spends) == 10
    before = _dump(ledger.path)
    refusal = "epsilon 1e-06 would overspend the budget: 1 total, 1 spent, 0 left"
    with pytest.raises(BudgetExceededError, match=f"^{refusal}; nothing was spent$"):
        ledger.spend(DIGEST, 1e-6, "count", budget=None)
    assert _dump(ledger.path) == before


def test_a_first_query_needs_a_budget_and_the_budget_cannot_change(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    with pytest.raises(CuratorError, match="no privacy budget is set for this data set"):
        ledger.spend(DIGEST, 0.5, "count", budget=None)
    assert ledger.budget(DIGEST) is None
    ledger.spend(DIGEST, 0.5, "count", budget=2.0)
    before = _dump(ledger.path)
    with pytest.raises(CuratorError, match=r"--budget 5.0 differs from this data set's budget 2.0"):
        ledger.spend(DIGEST, 0.5, "count", budget=5.0)
    with pytest.raises(ValueError, match=r"epsilon must be in \[2\^-20, 50\], got -1.0"):
        ledger.spend(DIGEST, -1.0, "count", budget=None)
    assert _dump(ledger.path) == before
    other = ledger.budget("cd" * 32)
    assert other is None  # budgets are per data set


def test_showing_a_budget_creates_no_ledger(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "ledger.sqlite"
    assert Ledger(path).budget(DIGEST) is None
    assert not path.parent.exists()


def test_a_file_that_is_not_a_ledger_is_named(tmp_path: Path) -> None:
    path = tmp_path / "not.sqlite"
    path.write_text("hello, this is not a database" * 20)
    with pytest.raises(CuratorError, match=r"--ledger: .*not.sqlite is not a usable ledger"):
        Ledger(path).spend(DIGEST, 0.5, "count", budget=1.0)


def _spend_once(path: str, start: multiprocessing.synchronize.Event) -> bool:
    start.wait(30)
    try:
        Ledger(Path(path)).spend(DIGEST, 0.3, "race", budget=1.0)
    except BudgetExceededError:
        return False
    return True


@pytest.mark.slow
def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger(path).spend(DIGEST, 0.1, "first", budget=1.0)  # 0.9 left: room for three of 0.3
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(4) as pool:
            pending = [pool.apply_async(_spend_once, (str(path), start)) for _ in range(6)]
            start.set()
            outcomes = [job.get(timeout=120) for job in pending]
    assert sum(outcomes) == 3
    budget = Ledger(path).budget(DIGEST)
    assert budget is not None
    assert budget.spent == pytest.approx(1.0)
    assert budget.remaining >= 0
    assert len(budget.spends) == 4
