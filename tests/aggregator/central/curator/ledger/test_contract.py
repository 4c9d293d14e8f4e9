"""The ledger's contract, on SQLite and PostgreSQL: datasets, tokens, exact spends, releases."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import (
    TOKEN_PREFIX,
    Analyst,
    BudgetExceededError,
    CustodianLedger,
    default_curator_url,
    open_ledger,
)
from tests.aggregator.central.curator.ledger._dump import dump

DS = "clinic-2024.v1"


def test_register_sets_the_total_once_and_it_cannot_change(ledger: CustodianLedger) -> None:
    first = ledger.register(DS, Fraction(1), Fraction(1, 10**6), description="patients")
    assert (first.name, first.epsilon, first.delta, first.description) == (
        DS,
        Fraction(1),
        Fraction(1, 10**6),
        "patients",
    )
    # The same totals, written as decimals, return it (the description is the first's).
    assert ledger.register(DS, 1.0, 1e-6, description="other") == first  # type: ignore[arg-type]
    assert ledger.dataset(DS) == first
    for eps, delta in (
        (Fraction(2), Fraction(1, 10**6)),
        (Fraction(1, 2), Fraction(1, 10**6)),
        (Fraction(1), Fraction(0)),
    ):
        with pytest.raises(CuratorError) as refused:
            ledger.register(DS, eps, delta, description="patients")
        message = str(refused.value)
        assert "registered with ε=1, δ=0.000001" in message
        assert "a dataset's budget cannot change" in message
    assert ledger.register(DS, Fraction(1), Fraction(1, 10**6), description="patients") == first


@pytest.mark.parametrize(
    ("name", "eps", "delta", "error"),
    [
        ("", Fraction(1), Fraction(0), "--dataset: a dataset name is 1-64"),
        ("a" * 65, Fraction(1), Fraction(0), "--dataset"),
        ("has space", Fraction(1), Fraction(0), "--dataset"),
        ("../etc", Fraction(1), Fraction(0), "--dataset"),
        ("ok", Fraction(0), Fraction(0), "--budget must be > 0, got 0"),
        ("ok", Fraction(-1), Fraction(0), "--budget must be > 0"),
        ("ok", Fraction(1), Fraction(1), "--delta must be < 1, got 1"),
        ("ok", Fraction(1), Fraction(-1, 10), "--delta must be >= 0, got -0.1"),
        ("ok", float("nan"), Fraction(0), "--budget must be a finite number, got nan"),
        ("ok", True, Fraction(0), "--budget must be a finite number, got True"),
    ],
)
def test_register_refuses_bad_names_and_values(
    ledger: CustodianLedger, name: str, eps: Fraction, delta: Fraction, error: str
) -> None:
    with pytest.raises(CuratorError, match=re.escape(error)):
        ledger.register(name, eps, delta, description="")
    assert ledger.dataset("a" * 64) is None


def test_a_token_authenticates_until_revoked_and_only_its_hash_is_stored(
    ledger: CustodianLedger, ledger_url: str
) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    token = ledger.issue_token(DS, "bob@example.org", Fraction(1, 2), Fraction(0))
    assert token.startswith(TOKEN_PREFIX)
    assert len(token) == len(TOKEN_PREFIX) + 43
    assert ledger.authenticate(token) == Analyst(DS, "bob@example.org")
    assert token not in repr(dump(ledger_url))
    with pytest.raises(CuratorError, match=r"already has a live token .* revoke it first"):
        ledger.issue_token(DS, "bob@example.org", Fraction(1, 2), Fraction(0))
    ledger.spend(DS, "bob@example.org", Fraction(1, 10), Fraction(0), "count")
    ledger.revoke_token(DS, "bob@example.org")
    assert ledger.authenticate(token) is None
    with pytest.raises(CuratorError, match="has no live token on dataset"):
        ledger.revoke_token(DS, "bob@example.org")
    again = ledger.issue_token(DS, "bob@example.org", Fraction(1, 2), Fraction(0))
    assert again != token
    assert ledger.authenticate(token) is None
    assert ledger.authenticate(again) == Analyst(DS, "bob@example.org")
    assert ledger.balance(DS, "bob@example.org").spent_epsilon == Fraction(1, 10)  # still counted
    (bob,) = ledger.analysts(DS)
    assert (bob.name, bob.epsilon, bob.spent_epsilon, bob.live) == (
        "bob@example.org",
        Fraction(1, 2),
        Fraction(1, 10),
        True,
    )
    assert bob.issued_at is not None
    assert bob.revoked_at is None


@pytest.mark.parametrize(
    "token", ["", "dnc_", "dnc_" + "A" * 43, "x" * 47, "dnc_" + "A" * 10_000, None, b"dnc_"]
)
def test_anything_but_a_live_token_authenticates_no_one(
    ledger: CustodianLedger, token: str
) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    ledger.issue_token(DS, "bob", Fraction(1), Fraction(0))
    assert ledger.authenticate(token) is None


@pytest.mark.parametrize(
    ("analyst", "eps", "delta", "error"),
    [
        (
            "custodian",
            Fraction(1),
            Fraction(0),
            "'custodian' is reserved for the custodian's own queries",
        ),
        ("", Fraction(1), Fraction(0), "--analyst: an analyst name is 1-64"),
        ("bob smith", Fraction(1), Fraction(0), "--analyst"),
        ("b" * 65, Fraction(1), Fraction(0), "--analyst"),
        (
            "bob",
            Fraction(11, 10),
            Fraction(0),
            "the budget ε=1.1, δ=0 of analyst 'bob' exceeds the total",
        ),
        ("bob", Fraction(1), Fraction(1, 10**5), "exceeds the total ε=1, δ=0.000001 of dataset"),
        ("bob", Fraction(0), Fraction(0), "--budget must be > 0"),
    ],
)
def test_issuing_refuses_reserved_and_bad_names_and_budgets_beyond_the_total(
    ledger: CustodianLedger, analyst: str, eps: Fraction, delta: Fraction, error: str
) -> None:
    ledger.register(DS, Fraction(1), Fraction(1, 10**6), description="")
    with pytest.raises(CuratorError, match=re.escape(error)):
        ledger.issue_token(DS, analyst, eps, delta)
    assert ledger.analysts(DS) == []


def test_unregistered_datasets_are_named(ledger: CustodianLedger) -> None:
    for call in (
        lambda: ledger.issue_token("nope", "bob", Fraction(1), Fraction(0)),
        lambda: ledger.spend("nope", "custodian", Fraction(1), Fraction(0), "q"),
        lambda: ledger.balance("nope"),
        lambda: ledger.analysts("nope"),
        lambda: ledger.save_release("nope", "bob", {}),
    ):
        with pytest.raises(CuratorError, match="--dataset: 'nope' is not registered"):
            call()


def test_ten_spends_of_a_tenth_use_exactly_one_and_an_eleventh_is_refused(
    ledger: CustodianLedger,
) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    ledger.issue_token(DS, "bob", Fraction(1), Fraction(0))
    for _ in range(10):
        after = ledger.spend(DS, "bob", 0.1, 0, "count")  # type: ignore[arg-type]
    assert (after.spent_epsilon, after.left_epsilon, len(after.spends)) == (
        Fraction(1),
        Fraction(0),
        10,
    )
    assert sum((s.epsilon for s in after.spends), Fraction(0)) == 1
    with pytest.raises(BudgetExceededError, match=r"nothing was spent$"):
        ledger.spend(DS, "bob", Fraction(1, 10**9), Fraction(0), "count")
    assert ledger.balance(DS).spent_epsilon == 1


def test_the_analysts_budget_refuses_and_a_refusal_changes_nothing(
    ledger: CustodianLedger, ledger_url: str
) -> None:
    ledger.register(DS, Fraction(2), Fraction(0), description="")
    ledger.issue_token(DS, "bob", Fraction(1, 2), Fraction(0))
    ledger.spend(DS, "bob", Fraction(2, 5), Fraction(0), "count")
    before = dump(ledger_url)
    with pytest.raises(BudgetExceededError) as refused:
        ledger.spend(DS, "bob", Fraction(1, 5), Fraction(0), "sum")
    assert str(refused.value) == (
        "spending ε=0.2, δ=0 would exceed the budget of analyst 'bob': analyst 'bob': "
        "budget ε=0.5, δ=0, spent ε=0.4, δ=0, left ε=0.1, δ=0; dataset 'clinic-2024.v1': "
        "total ε=2, δ=0, spent ε=0.4, δ=0, left ε=1.6, δ=0; nothing was spent"
    )
    assert dump(ledger_url) == before


def test_the_datasets_total_bounds_all_analysts_together(
    ledger: CustodianLedger, ledger_url: str
) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    ledger.issue_token(DS, "alice", Fraction(3, 4), Fraction(0))
    ledger.issue_token(DS, "bob", Fraction(3, 4), Fraction(0))
    ledger.spend(DS, "alice", Fraction(3, 4), Fraction(0), "count")
    before = dump(ledger_url)
    with pytest.raises(BudgetExceededError) as refused:
        ledger.spend(DS, "bob", Fraction(1, 2), Fraction(0), "count")
    assert str(refused.value) == (
        "spending ε=0.5, δ=0 would exceed the total of dataset 'clinic-2024.v1': "
        "analyst 'bob': budget ε=0.75, δ=0, spent ε=0, δ=0, left ε=0.75, δ=0; "
        "dataset 'clinic-2024.v1': total ε=1, δ=0, spent ε=0.75, δ=0, left ε=0.25, δ=0; "
        "nothing was spent"
    )
    assert dump(ledger_url) == before
    bob = ledger.balance(DS, "bob")
    assert (bob.left_epsilon, bob.dataset_left_epsilon) == (Fraction(1, 4), Fraction(1, 4))
    ledger.spend(DS, "bob", Fraction(1, 4), Fraction(0), "count")  # exactly what is left
    with pytest.raises(BudgetExceededError, match="the budget of analyst 'alice' and the total"):
        ledger.spend(DS, "alice", Fraction(1, 3), Fraction(0), "count")


def test_the_custodian_needs_no_token_and_is_bounded_by_the_total(
    ledger: CustodianLedger,
) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    assert ledger.authenticate("custodian") is None
    ledger.spend(DS, "custodian", Fraction(2, 3), Fraction(0), "count")
    with pytest.raises(BudgetExceededError) as refused:
        ledger.spend(DS, "custodian", Fraction(1, 2), Fraction(0), "count")
    assert "the custodian (bounded by the dataset's total) spent ε=2/3, δ=0" in str(refused.value)
    assert "left ε=1/3, δ=0; nothing was spent" in str(refused.value)
    (custodian,) = ledger.analysts(DS)
    assert (custodian.name, custodian.epsilon, custodian.live) == ("custodian", Fraction(1), False)


def test_delta_is_a_second_budget_checked_the_same_way(ledger: CustodianLedger) -> None:
    ledger.register(DS, Fraction(10), Fraction(1, 10**5), description="")
    ledger.issue_token(DS, "bob", Fraction(10), Fraction(1, 10**6))
    for _ in range(10):
        ledger.spend(DS, "bob", Fraction(1, 10), 1e-7, "keys")  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError, match=r"spending ε=0.1, δ=0.0000000001 would"):
        ledger.spend(DS, "bob", Fraction(1, 10), Fraction(1, 10**10), "keys")
    ledger.spend(DS, "bob", Fraction(1, 10), Fraction(0), "count")  # pure ε still fits
    balance = ledger.balance(DS, "bob")
    assert (balance.spent_delta, balance.left_delta) == (Fraction(1, 10**6), Fraction(0))
    assert ledger.balance(DS).left_delta == Fraction(9, 10**6)


def test_only_analysts_with_a_live_token_spend(ledger: CustodianLedger) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    with pytest.raises(CuratorError, match="'eve' has no budget on dataset"):
        ledger.spend(DS, "eve", Fraction(1, 10), Fraction(0), "count")
    ledger.issue_token(DS, "bob", Fraction(1), Fraction(0))
    ledger.revoke_token(DS, "bob")
    with pytest.raises(CuratorError, match=r"token of analyst 'bob' .* was revoked"):
        ledger.spend(DS, "bob", Fraction(1, 10), Fraction(0), "count")
    assert ledger.balance(DS).spent_epsilon == 0
    with pytest.raises(CuratorError, match="epsilon must be > 0"):
        ledger.spend(DS, "custodian", Fraction(0), Fraction(0), "count")


def test_releases_round_trip(ledger: CustodianLedger) -> None:
    ledger.register(DS, Fraction(1), Fraction(0), description="")
    ledger.register("other", Fraction(1), Fraction(0), description="")
    document = {
        "format": "deniable-curator-release/1",
        "epsilon": 0.5,
        "columns": [{"name": "city", "type": "str", "values": ["Zürich", None]}],
        "cells": [{"values": ["Zürich"], "count": 3}, {"values": [None], "count": -1}],
        "noise_scale": [2, 1],
    }
    first = ledger.save_release(DS, "custodian", document)
    second = ledger.save_release(DS, "bob", {"x": 1})
    assert re.fullmatch(r"r-[0-9a-f]{12}", first)
    assert first != second
    assert ledger.release(DS, first) == document
    assert ledger.release("other", first) is None
    assert ledger.release(DS, "r-000000000000") is None
    summaries = ledger.releases(DS)
    assert [(r.id, r.analyst) for r in summaries] == [(first, "custodian"), (second, "bob")]
    assert summaries[0].summary == (
        "deniable-curator-release/1; columns city; epsilon 0.5; 2 cells"
    )
    assert ledger.releases("other") == []
    with pytest.raises(CuratorError, match="a release must be a JSON document"):
        ledger.save_release(DS, "bob", {"x": float("nan")})


def test_everything_survives_closing_and_reopening(ledger_url: str) -> None:
    with open_ledger(ledger_url) as first:
        first.register(DS, Fraction(1), Fraction(1, 10**6), description="patients")
        token = first.issue_token(DS, "bob", Fraction(1, 2), Fraction(1, 10**6))
        first.spend(DS, "bob", Fraction(1, 3), Fraction(1, 10**7), "count")
        first.spend(DS, "custodian", Fraction(1, 10), Fraction(0), "mean")
        release = first.save_release(DS, "bob", {"a": [1, 2]})
        balances = (first.balance(DS), first.balance(DS, "bob"), first.analysts(DS))
    with open_ledger(ledger_url) as again:
        assert (again.balance(DS), again.balance(DS, "bob"), again.analysts(DS)) == balances
        assert again.authenticate(token) == Analyst(DS, "bob")
        assert again.release(DS, release) == {"a": [1, 2]}
        with pytest.raises(BudgetExceededError):
            again.spend(DS, "bob", Fraction(1, 6) + Fraction(1, 10**9), Fraction(0), "count")
        assert again.spend(DS, "bob", Fraction(1, 6), Fraction(0), "count").left_epsilon == 0


def test_default_url_and_bad_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_curator_url() == f"sqlite:///{tmp_path / 'xdg' / 'deniable' / 'curator.db'}"
    with open_ledger(default_curator_url()) as ledger:
        ledger.register(DS, Fraction(1), Fraction(0), description="")
    assert (tmp_path / "xdg" / "deniable" / "curator.db").exists()
    with pytest.raises(CuratorError, match="--db: unsupported database URL 'mysql://x'"):
        open_ledger("mysql://x")
    with pytest.raises(CuratorError, match="names no file"):
        open_ledger("sqlite:///")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database " * 100)
    with pytest.raises(CuratorError, match=r"--db: .*junk.db is not a usable ledger database"):
        open_ledger(f"sqlite:///{junk}")


def test_a_newer_schema_is_refused(ledger_url: str) -> None:
    open_ledger(ledger_url).close()
    if ledger_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(ledger_url.removeprefix("sqlite:///")) as db:
            db.execute("UPDATE curator_schema_version SET version = 99")
    else:
        import psycopg

        with psycopg.connect(ledger_url) as pg:
            pg.execute("UPDATE curator_schema_version SET version = 99")
    with pytest.raises(CuratorError, match="schema version 99, newer than this deniable's 1"):
        open_ledger(ledger_url)
