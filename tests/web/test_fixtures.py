"""The page's unit tests compare with what this Python computes: their fixtures are current."""

from __future__ import annotations

from tests.web._fixtures import FIXTURES, render


def test_committed_fixtures_are_what_the_python_client_computes() -> None:
    assert FIXTURES.read_text(encoding="utf-8") == render(), (
        "client/web/test/python-fixtures.json is stale: run python -m tests.web._fixtures"
    )
