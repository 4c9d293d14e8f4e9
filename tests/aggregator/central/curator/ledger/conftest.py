"""The ledger's fixtures: one URL per backend (SQLite in a temporary folder, a throwaway PG)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deniable.aggregator.central.curator.ledger import CustodianLedger, open_ledger

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each backend (PostgreSQL: skipped where it is missing)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'curator.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[CustodianLedger]:
    """The ledger in that database, closed after the test."""
    opened = open_ledger(ledger_url)
    try:
        yield opened
    finally:
        opened.close()
