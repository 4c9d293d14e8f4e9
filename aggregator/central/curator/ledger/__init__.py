"""The custodian's budget ledger: per dataset and analyst, in the custodian's database.

A dataset is registered once by name with its total (ε, δ); the custodian issues each
analyst a token (:meth:`CustodianLedger.issue_token`) with a budget within that total;
every query is charged atomically before any noise is drawn (:meth:`CustodianLedger.spend`),
against both the analyst's budget and the dataset's total. SQLite by default
(:func:`default_curator_url`), PostgreSQL by URL (:func:`open_ledger`). The old ledger,
keyed by a data file's SHA-256, is read and moved over by :func:`migrate_legacy`.
"""

from __future__ import annotations

from deniable.aggregator.central.curator.ledger._api import CustodianLedger
from deniable.aggregator.central.curator.ledger._legacy import (
    MigrationResult,
    legacy_budget,
    legacy_ledger_path,
    migrate_legacy,
    needs_migration,
)
from deniable.aggregator.central.curator.ledger._model import (
    CUSTODIAN,
    TOKEN_PREFIX,
    AlreadyImportedError,
    Analyst,
    AnalystBudget,
    Balance,
    BudgetExceededError,
    DatasetBudget,
    LedgerUnavailableError,
    ReleaseSummary,
    SpendEntry,
)
from deniable.aggregator.central.curator.ledger._open import default_curator_url, open_ledger

__all__ = [
    "CUSTODIAN",
    "TOKEN_PREFIX",
    "AlreadyImportedError",
    "Analyst",
    "AnalystBudget",
    "Balance",
    "BudgetExceededError",
    "CustodianLedger",
    "DatasetBudget",
    "LedgerUnavailableError",
    "MigrationResult",
    "ReleaseSummary",
    "SpendEntry",
    "default_curator_url",
    "legacy_budget",
    "legacy_ledger_path",
    "migrate_legacy",
    "needs_migration",
    "open_ledger",
]
