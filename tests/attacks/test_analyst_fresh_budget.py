"""Attack: an analyst who has spent their budget tries to get a fresh one.

Against the old ledger (issue 36) this worked: it sat in the analyst's home, keyed by the
data file's SHA-256, so a trailing newline in the file, or ``--ledger other.sqlite``, gave
a whole new budget. The custodian's ledger keys every spend by the dataset's registered
name and the analyst, and an analyst reaches it only through a token the custodian
issued: the file's bytes and any other ledger file are nothing to it.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

import pytest

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import (
    BudgetExceededError,
    CustodianLedger,
    open_ledger,
)
from tests.aggregator.central.curator.ledger._old_ledger import BudgetExceededError as OldRefusal
from tests.aggregator.central.curator.ledger._old_ledger import Ledger

TENTH = Fraction(1, 10)


def file_digest(path: Path) -> str:
    """What the old ledger keyed a budget by: the file's SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def query(ledger: CustodianLedger, token: str, dataset: str, epsilon: Fraction) -> None:
    """What the custodian's daemon does for a query: authenticate, then charge.

    A token names one dataset, and the charge comes before any noise is drawn.
    """
    analyst = ledger.authenticate(token)
    if analyst is None:
        raise CuratorError("token: not a live token")
    if analyst.dataset != dataset:
        raise CuratorError(f"token: not a token for dataset {dataset!r}")
    ledger.spend(analyst.dataset, analyst.name, epsilon, Fraction(0), "count")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "patients.csv"
    path.write_text("name,hiv\nbob,yes\nann,no\n")
    return path


@pytest.fixture
def custodian(tmp_path: Path) -> CustodianLedger:
    ledger = open_ledger(f"sqlite:///{tmp_path / 'custodian' / 'curator.db'}")
    ledger.register("patients", Fraction(1), Fraction(0), description="patients.csv")
    ledger.register("staff", Fraction(1), Fraction(0), description="staff.csv")
    return ledger


def test_the_old_ledger_gave_a_fresh_budget_for_a_trailing_newline(
    data: Path, tmp_path: Path
) -> None:
    old = Ledger(tmp_path / "old.sqlite")
    for _ in range(10):
        old.spend(file_digest(data), 0.1, "count", budget=1.0)
    with pytest.raises(OldRefusal):
        old.spend(file_digest(data), 0.1, "count", budget=1.0)
    data.write_text(data.read_text() + "\n")  # the same rows
    old.spend(file_digest(data), 0.1, "count", budget=1.0)  # the weakness that is fixed
    Ledger(tmp_path / "other.sqlite").spend(file_digest(data), 0.1, "count", budget=1.0)


def test_changing_the_files_bytes_gives_no_fresh_budget(
    data: Path, custodian: CustodianLedger
) -> None:
    token = custodian.issue_token("patients", "mallory", Fraction(1), Fraction(0))
    for _ in range(10):
        query(custodian, token, "patients", TENTH)
    data.write_text(data.read_text() + "\n")
    data.write_text(data.read_text().replace("ann", "Ann"))
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        query(custodian, token, "patients", TENTH)
    assert custodian.balance("patients").spent_epsilon == 1


def test_another_ledger_path_knows_no_token_and_the_custodians_still_refuses(
    custodian: CustodianLedger, tmp_path: Path
) -> None:
    token = custodian.issue_token("patients", "mallory", Fraction(1), Fraction(0))
    for _ in range(10):
        query(custodian, token, "patients", TENTH)
    with open_ledger(f"sqlite:///{tmp_path / 'mine.sqlite'}") as mine:
        # Her own ledger: she may register "patients" there, but her token means nothing.
        mine.register("patients", Fraction(100), Fraction(0), description="mine")
        with pytest.raises(CuratorError, match="not a live token"):
            query(mine, token, "patients", TENTH)
    with pytest.raises(BudgetExceededError):
        query(custodian, token, "patients", TENTH)
    # Nor can she re-register the dataset with a bigger total at the custodian's.
    with pytest.raises(CuratorError, match="a dataset's budget cannot change"):
        custodian.register("patients", Fraction(100), Fraction(0), description="mine")


def test_a_revoked_token_cannot_spend_and_a_new_one_keeps_the_spends(
    custodian: CustodianLedger,
) -> None:
    token = custodian.issue_token("patients", "mallory", Fraction(1, 2), Fraction(0))
    for _ in range(5):
        query(custodian, token, "patients", TENTH)
    custodian.revoke_token("patients", "mallory")
    with pytest.raises(CuratorError, match="not a live token"):
        query(custodian, token, "patients", TENTH)
    with pytest.raises(CuratorError, match="was revoked"):
        custodian.spend("patients", "mallory", TENTH, Fraction(0), "count")
    again = custodian.issue_token("patients", "mallory", Fraction(1, 2), Fraction(0))
    with pytest.raises(BudgetExceededError):
        query(custodian, again, "patients", TENTH)
    assert custodian.balance("patients").spent_epsilon == Fraction(1, 2)


def test_a_token_for_one_dataset_cannot_spend_on_another(custodian: CustodianLedger) -> None:
    token = custodian.issue_token("patients", "mallory", Fraction(1), Fraction(0))
    with pytest.raises(CuratorError, match="not a token for dataset 'staff'"):
        query(custodian, token, "staff", TENTH)
    # Even called directly, the ledger has no budget for her on the other dataset.
    with pytest.raises(CuratorError, match="'mallory' has no budget on dataset 'staff'"):
        custodian.spend("staff", "mallory", TENTH, Fraction(0), "count")
    assert custodian.balance("staff").spent_epsilon == 0
    assert custodian.balance("patients").spent_epsilon == 0
