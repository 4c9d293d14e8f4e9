"""What the curator's service answers: plain values, the same for the daemon and in-process."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import Value

__all__ = [
    "AnalystsView",
    "Answer",
    "BalanceView",
    "Charge",
    "LedgerView",
    "ReleaseAnswer",
    "ReleasedValue",
    "SpendView",
]


def fraction_text(value: Fraction) -> str:
    """``p/q`` (or ``p`` for an integer): an exact amount on the wire and in JSON."""
    return str(value)


@dataclass(frozen=True)
class Charge:
    """What a query spent (or would spend): exact ε and δ."""

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def to_dict(self) -> dict[str, Any]:
        """Exact fractions as text, and their floats for reading."""
        return {
            "epsilon": float(self.epsilon),
            "epsilon_exact": fraction_text(self.epsilon),
            "delta": float(self.delta),
            "delta_exact": fraction_text(self.delta),
        }


@dataclass(frozen=True)
class BalanceView:
    """An analyst's budget and spending, and what the data set has left (exact).

    ``epsilon_budget`` and ``delta_budget`` are None for the custodian, whom only the
    data set's total bounds.
    """

    analyst: str
    epsilon_budget: Fraction | None
    epsilon_spent: Fraction
    delta_budget: Fraction | None
    delta_spent: Fraction
    dataset_epsilon_left: Fraction
    dataset_delta_left: Fraction

    def to_dict(self) -> dict[str, Any]:
        """Floats for reading, with each exact fraction beside it."""
        out: dict[str, Any] = {"analyst": self.analyst}
        for name in (
            "epsilon_budget",
            "epsilon_spent",
            "delta_budget",
            "delta_spent",
            "dataset_epsilon_left",
            "dataset_delta_left",
        ):
            value = getattr(self, name)
            out[name] = None if value is None else float(value)
            out[f"{name}_exact"] = None if value is None else fraction_text(value)
        return out


@dataclass(frozen=True)
class ReleasedValue:
    """One released number (a histogram's bin, or the single value of a count, sum, mean)."""

    key: Value | None
    keyed: bool
    value: float | None
    interval: dict[str, Any]

    @property
    def key_json(self) -> str:
        """The key as JSON text (empty when the answer has no keys)."""
        return json.dumps(self.key) if self.keyed else ""


@dataclass(frozen=True)
class Answer:
    """A query's answer: what it spent, the released values and the whole JSON document."""

    charge: Charge
    released: tuple[ReleasedValue, ...]
    document: dict[str, Any]
    balance: BalanceView | None = None
    preview: bool = False


@dataclass(frozen=True)
class ReleaseAnswer:
    """A stored release: its id, what it spent (zero when read back) and its document."""

    release_id: str
    charge: Charge
    document: dict[str, Any]
    balance: BalanceView | None = None


@dataclass(frozen=True)
class SpendView:
    """One spend of the ledger."""

    at: float
    analyst: str
    query: str
    epsilon: Fraction
    delta: Fraction


@dataclass(frozen=True)
class LedgerView:
    """An analyst's (or the whole data set's) ledger: balance and spends, oldest first."""

    dataset: str
    balance: BalanceView
    spends: tuple[SpendView, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The ``curate ledger --json`` document."""
        return {
            "dataset": self.dataset,
            "balance": self.balance.to_dict(),
            "spends": [
                {
                    "at": spend.at,
                    "analyst": spend.analyst,
                    "query": spend.query,
                    "epsilon": float(spend.epsilon),
                    "epsilon_exact": fraction_text(spend.epsilon),
                    "delta": float(spend.delta),
                    "delta_exact": fraction_text(spend.delta),
                }
                for spend in self.spends
            ],
        }


@dataclass(frozen=True)
class AnalystsView:
    """Every analyst's balance, and who is revoked."""

    dataset: str
    epsilon_budget: Fraction
    delta_budget: Fraction
    balances: tuple[BalanceView, ...]
    revoked: tuple[str, ...]
