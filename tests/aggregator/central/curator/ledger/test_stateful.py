"""The ledger against a model: any sequence of register, issue, revoke, spend and reopen."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import (
    Analyst,
    BudgetExceededError,
    CustodianLedger,
    open_ledger,
)
from tests.aggregator.central.curator.ledger._dump import TABLES

DATASETS = st.sampled_from(["d1", "d2"])
ANALYSTS = st.sampled_from(["alice", "bob", "custodian"])
EPSILONS = st.sampled_from(
    [Fraction(1, 10), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(1), Fraction(3, 2)]
)
DELTAS = st.sampled_from([Fraction(0), Fraction(0), Fraction(1, 10**6), Fraction(1, 10**5)])
ZERO = Fraction(0)


@dataclass
class Budget:
    epsilon: Fraction
    delta: Fraction
    spent_epsilon: Fraction = ZERO
    spent_delta: Fraction = ZERO

    def covers(self, epsilon: Fraction, delta: Fraction) -> bool:
        return (
            self.spent_epsilon + epsilon <= self.epsilon and self.spent_delta + delta <= self.delta
        )


@dataclass
class Model:
    datasets: dict[str, Budget] = field(default_factory=dict)
    analysts: dict[tuple[str, str], Budget] = field(default_factory=dict)
    live: dict[tuple[str, str], str] = field(default_factory=dict)  # the live token
    spends: dict[str, int] = field(default_factory=dict)


class LedgerMachine(RuleBasedStateMachine):
    """Each rule calls the ledger and the model and compares outcomes and balances."""

    @staticmethod
    def fresh_url() -> str:
        """An empty database's URL, for each example (set by each test's subclass)."""
        raise NotImplementedError

    def __init__(self) -> None:
        super().__init__()
        self.url = self.fresh_url()
        self.ledger: CustodianLedger = open_ledger(self.url)
        self.model = Model()

    tokens = Bundle("tokens")

    @rule(dataset=DATASETS, epsilon=EPSILONS, delta=DELTAS)
    def register(self, dataset: str, epsilon: Fraction, delta: Fraction) -> None:
        known = self.model.datasets.get(dataset)
        if known is not None and (known.epsilon, known.delta) != (epsilon, delta):
            with pytest.raises(CuratorError, match="a dataset's budget cannot change"):
                self.ledger.register(dataset, epsilon, delta, description="")
            return
        got = self.ledger.register(dataset, epsilon, delta, description="")
        assert (got.epsilon, got.delta) == (epsilon, delta)
        self.model.datasets.setdefault(dataset, Budget(epsilon, delta))
        self.model.spends.setdefault(dataset, 0)

    @rule(target=tokens, dataset=DATASETS, analyst=ANALYSTS, epsilon=EPSILONS, delta=DELTAS)
    def issue(
        self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction
    ) -> tuple[str, str, str]:
        total = self.model.datasets.get(dataset)
        key = (dataset, analyst)
        if (
            analyst == "custodian"
            or total is None
            or epsilon > total.epsilon
            or delta > total.delta
            or key in self.model.live
        ):
            with pytest.raises(CuratorError):
                self.ledger.issue_token(dataset, analyst, epsilon, delta)
            return (dataset, analyst, "no token")
        token = self.ledger.issue_token(dataset, analyst, epsilon, delta)
        old = self.model.analysts.get(key)
        spent = (ZERO, ZERO) if old is None else (old.spent_epsilon, old.spent_delta)
        self.model.analysts[key] = Budget(epsilon, delta, *spent)
        self.model.live[key] = token
        return (dataset, analyst, token)

    @rule(dataset=DATASETS, analyst=ANALYSTS)
    def revoke(self, dataset: str, analyst: str) -> None:
        if analyst == "custodian" or (dataset, analyst) not in self.model.live:
            with pytest.raises(CuratorError):
                self.ledger.revoke_token(dataset, analyst)
            return
        self.ledger.revoke_token(dataset, analyst)
        del self.model.live[(dataset, analyst)]

    @rule(issued=tokens)
    def authenticate(self, issued: tuple[str, str, str]) -> None:
        dataset, analyst, token = issued
        live = self.model.live.get((dataset, analyst)) == token
        expected = Analyst(dataset, analyst) if live else None
        assert self.ledger.authenticate(token) == expected

    @rule(dataset=DATASETS, analyst=ANALYSTS, epsilon=EPSILONS, delta=DELTAS)
    def spend(self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction) -> None:
        total = self.model.datasets.get(dataset)
        key = (dataset, analyst)
        own = self.model.analysts.get(key)
        if total is None or (analyst != "custodian" and key not in self.model.live):
            with pytest.raises(CuratorError) as refused:
                self.ledger.spend(dataset, analyst, epsilon, delta, "q")
            assert not isinstance(refused.value, BudgetExceededError)
            return
        if own is None:  # the custodian's first spend: bounded by the total only
            own = Budget(total.epsilon, total.delta)
        if not (own.covers(epsilon, delta) and total.covers(epsilon, delta)):
            with pytest.raises(BudgetExceededError, match=r"nothing was spent$"):
                self.ledger.spend(dataset, analyst, epsilon, delta, "q")
            return
        after = self.ledger.spend(dataset, analyst, epsilon, delta, "q")
        for budget in (own, total):
            budget.spent_epsilon += epsilon
            budget.spent_delta += delta
        self.model.analysts[key] = own
        self.model.spends[dataset] += 1
        assert (after.spent_epsilon, after.spent_delta) == (own.spent_epsilon, own.spent_delta)

    @rule()
    def reopen(self) -> None:
        self.ledger.close()
        self.ledger = open_ledger(self.url)

    @invariant()
    def balances_agree(self) -> None:
        for dataset, total in self.model.datasets.items():
            balance = self.ledger.balance(dataset)
            assert (balance.spent_epsilon, balance.spent_delta) == (
                total.spent_epsilon,
                total.spent_delta,
            )
            assert len(balance.spends) == self.model.spends[dataset]
            assert balance.spent_epsilon <= balance.epsilon
            assert balance.spent_delta <= balance.delta
            listed = {
                a.name: (a.epsilon, a.delta, a.spent_epsilon, a.spent_delta, a.live)
                for a in self.ledger.analysts(dataset)
            }
            assert listed == {
                name: (
                    b.epsilon,
                    b.delta,
                    b.spent_epsilon,
                    b.spent_delta,
                    (d, name) in self.model.live,
                )
                for (d, name), b in self.model.analysts.items()
                if d == dataset
            }

    def teardown(self) -> None:
        self.ledger.close()


def _run(fresh_url: Callable[[], str], examples: int) -> None:
    machine = type("Machine", (LedgerMachine,), {"fresh_url": staticmethod(fresh_url)})
    run_state_machine_as_test(
        machine, settings=settings(max_examples=examples, stateful_step_count=30)
    )


def test_the_sqlite_ledger_follows_the_model() -> None:
    folders: list[str] = []

    def cleanup() -> None:
        while folders:
            shutil.rmtree(folders.pop(), ignore_errors=True)

    def fresh_url() -> str:
        cleanup()
        folders.append(tempfile.mkdtemp(prefix="ledger-model-"))
        return f"sqlite:///{folders[-1]}/curator.db"

    try:
        _run(fresh_url, examples=60)
    finally:
        cleanup()


def test_the_postgres_ledger_follows_the_model(postgres_url: str) -> None:
    import psycopg

    def fresh_url() -> str:
        with psycopg.connect(postgres_url, autocommit=True) as db:
            for table in TABLES:
                db.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        return postgres_url

    _run(fresh_url, examples=12)
