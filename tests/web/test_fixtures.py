"""The page's unit tests compare with what this Python computes: their fixtures are current."""

from __future__ import annotations

from tests.web import _casefold
from tests.web._fixtures import FIXTURES, render
from tests.web._node import node_modules


def test_committed_fixtures_are_what_the_python_client_computes() -> None:
    assert FIXTURES.read_text(encoding="utf-8") == render(), (
        "client/web/test/python-fixtures.json is stale: run python -m tests.web._fixtures"
    )


def test_the_casefold_table_is_where_python_and_javascript_differ() -> None:
    node_modules()  # skips without Node.js
    assert _casefold.TABLE.read_text(encoding="utf-8") == _casefold.render(), (
        "client/web/src/store/casefold.ts is stale: run python -m tests.web._casefold"
    )
