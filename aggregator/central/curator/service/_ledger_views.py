"""The ledger's balances as the service's views (the custodian has no budget of their own)."""

from __future__ import annotations

from deniable.aggregator.central.curator.ledger import CUSTODIAN, Balance, CustodianLedger
from deniable.aggregator.central.curator.service._results import (
    AnalystsView,
    BalanceView,
    LedgerView,
    SpendView,
)

__all__ = ["analysts_view", "balance_view", "ledger_view"]


def balance_view(balance: Balance, analyst: str) -> BalanceView:
    """An analyst's balance; the custodian's budget is the data set's, shown as none."""
    own = analyst != CUSTODIAN
    return BalanceView(
        analyst=analyst,
        epsilon_budget=balance.epsilon if own else None,
        epsilon_spent=balance.spent_epsilon,
        delta_budget=balance.delta if own else None,
        delta_spent=balance.spent_delta,
        dataset_epsilon_left=balance.dataset_left_epsilon,
        dataset_delta_left=balance.dataset_left_delta,
    )


def ledger_view(dataset: str, balance: Balance, analyst: str) -> LedgerView:
    """A balance with its spends, oldest first."""
    return LedgerView(
        dataset,
        balance_view(balance, analyst),
        tuple(
            SpendView(spend.at, spend.analyst, spend.query, spend.epsilon, spend.delta)
            for spend in balance.spends
        ),
    )


def analysts_view(dataset: str, ledger: CustodianLedger) -> AnalystsView:
    """Every analyst's balance and who is revoked, with the data set's totals."""
    registered = ledger.dataset(dataset)
    assert registered is not None
    rest = ledger.balance(dataset)
    balances = tuple(
        BalanceView(
            analyst=item.name,
            epsilon_budget=item.epsilon,
            epsilon_spent=item.spent_epsilon,
            delta_budget=item.delta,
            delta_spent=item.spent_delta,
            dataset_epsilon_left=rest.dataset_left_epsilon,
            dataset_delta_left=rest.dataset_left_delta,
        )
        for item in ledger.analysts(dataset)
    )
    revoked = tuple(item.name for item in ledger.analysts(dataset) if not item.live)
    return AnalystsView(dataset, registered.epsilon, registered.delta, balances, revoked)
