"""The spend check: both the analyst's budget and the dataset's total, exactly, then the record."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._model import (
    CUSTODIAN,
    BudgetExceededError,
    SpendEntry,
    from_text,
    shown,
    to_text,
)
from deniable.aggregator.central.curator.ledger._schema import Db

__all__ = ["Totals", "analyst_totals", "charge", "dataset_totals", "has_live_token", "unknown"]

ZERO = Fraction(0)


class Totals(NamedTuple):
    """A budget (ε, δ) and what was spent of it."""

    epsilon: Fraction
    delta: Fraction
    spent_epsilon: Fraction
    spent_delta: Fraction

    def covers(self, epsilon: Fraction, delta: Fraction) -> bool:
        """Whether spent + (ε, δ) stays within the budget, in both."""
        return (
            self.spent_epsilon + epsilon <= self.epsilon and self.spent_delta + delta <= self.delta
        )

    def left(self) -> tuple[Fraction, Fraction]:
        """What is left of (ε, δ), never below 0 (a budget lowered below what was spent)."""
        return (
            max(self.epsilon - self.spent_epsilon, ZERO),
            max(self.delta - self.spent_delta, ZERO),
        )


def _totals(row: Sequence[str]) -> Totals:
    return Totals(*(from_text(value) for value in row))


def unknown(dataset: str) -> CuratorError:
    """The error for a dataset that is not registered."""
    return CuratorError(
        f"--dataset: {dataset!r} is not registered with this custodian "
        "(register it with its total budget first)"
    )


def dataset_totals(db: Db, dataset: str, *, lock: bool = False) -> Totals | None:
    """The dataset's total and spent; ``lock`` holds its row until the transaction ends."""
    found = db.rows(
        "SELECT epsilon, delta, spent_epsilon, spent_delta FROM curator_datasets WHERE name = ?"
        + (db.for_update if lock else ""),
        (dataset,),
    )
    return _totals(found[0]) if found else None


def analyst_totals(db: Db, dataset: str, analyst: str) -> Totals | None:
    """The analyst's budget and spent on the dataset, or None if they never had one."""
    found = db.rows(
        "SELECT epsilon, delta, spent_epsilon, spent_delta FROM curator_analysts "
        "WHERE dataset = ? AND name = ?",
        (dataset, analyst),
    )
    return _totals(found[0]) if found else None


def has_live_token(db: Db, dataset: str, analyst: str) -> bool:
    """Whether the analyst holds a token on the dataset that is not revoked."""
    return bool(
        db.rows(
            "SELECT 1 FROM curator_tokens WHERE dataset = ? AND analyst = ? AND revoked_at IS NULL",
            (dataset, analyst),
        )
    )


def charge(db: Db, dataset: str, spends: Sequence[SpendEntry], *, live: bool) -> None:
    """Check and record ``spends`` in the caller's write transaction (nothing on a refusal).

    The dataset's row is locked first (PostgreSQL; SQLite's transaction is exclusive), so
    concurrent charges of one dataset take turns. ``live``: an analyst other than the
    custodian needs a live token (a query); without, past spends are recorded (migration).

    Raises:
        BudgetExceededError: an analyst's budget or the dataset's total would be exceeded.
        CuratorError: the dataset is not registered, an analyst has no budget or no token.
    """
    ds = dataset_totals(db, dataset, lock=True)
    if ds is None:
        raise unknown(dataset)
    asked: dict[str, tuple[Fraction, Fraction]] = {}
    for entry in spends:
        e, d = asked.get(entry.analyst, (ZERO, ZERO))
        asked[entry.analyst] = (e + entry.epsilon, d + entry.delta)
    all_e = sum((e for e, _ in asked.values()), ZERO)
    all_d = sum((d for _, d in asked.values()), ZERO)
    mine: dict[str, Totals] = {}
    for name in asked:
        row = analyst_totals(db, dataset, name)
        if row is None and name != CUSTODIAN:
            raise CuratorError(
                f"--analyst: {name!r} has no budget on dataset {dataset!r} "
                "(the custodian issues a token with one first); nothing was spent"
            )
        if live and name != CUSTODIAN and not has_live_token(db, dataset, name):
            raise CuratorError(
                f"token: the token of analyst {name!r} on dataset {dataset!r} was revoked; "
                "nothing was spent"
            )
        mine[name] = row if row is not None else Totals(ds.epsilon, ds.delta, ZERO, ZERO)
    over_dataset = not ds.covers(all_e, all_d)
    for name, (e, d) in asked.items():
        if over_dataset or not mine[name].covers(e, d):
            raise BudgetExceededError(
                _refusal(dataset, name, (e, d), mine[name], ds, (all_e, all_d))
            )
    for name, (e, d) in asked.items():
        row = mine[name]
        spent = (to_text(row.spent_epsilon + e), to_text(row.spent_delta + d))
        changed = db.run(
            "UPDATE curator_analysts SET spent_epsilon = ?, spent_delta = ? "
            "WHERE dataset = ? AND name = ?",
            (*spent, dataset, name),
        )
        if not changed:  # the custodian's first spend on this dataset
            db.run(
                "INSERT INTO curator_analysts "
                "(dataset, name, epsilon, delta, spent_epsilon, spent_delta) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (dataset, name, to_text(ds.epsilon), to_text(ds.delta), *spent),
            )
    for entry in spends:
        db.run(
            "INSERT INTO curator_spends (dataset, analyst, at, query, epsilon, delta) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                dataset,
                entry.analyst,
                entry.at,
                entry.query,
                to_text(entry.epsilon),
                to_text(entry.delta),
            ),
        )
    db.run(
        "UPDATE curator_datasets SET spent_epsilon = ?, spent_delta = ? WHERE name = ?",
        (to_text(ds.spent_epsilon + all_e), to_text(ds.spent_delta + all_d), dataset),
    )


def _pair(values: tuple[Fraction, Fraction]) -> str:
    return f"ε={shown(values[0])}, δ={shown(values[1])}"


def _refusal(
    dataset: str,
    analyst: str,
    asked: tuple[Fraction, Fraction],
    mine: Totals,
    ds: Totals,
    all_asked: tuple[Fraction, Fraction],
) -> str:
    """The refusal: what was asked, spent and left, for the analyst and the dataset."""
    over = []
    if analyst != CUSTODIAN and not mine.covers(*asked):
        over.append(f"the budget of analyst {analyst!r}")
    if not ds.covers(*all_asked):
        over.append(f"the total of dataset {dataset!r}")
    spent = (mine.spent_epsilon, mine.spent_delta)
    if analyst == CUSTODIAN:
        own = f"the custodian (bounded by the dataset's total) spent {_pair(spent)}"
    else:
        own = (
            f"analyst {analyst!r}: budget {_pair((mine.epsilon, mine.delta))}, "
            f"spent {_pair(spent)}, left {_pair(mine.left())}"
        )
    return (
        f"spending {_pair(asked)} would exceed {' and '.join(over)}: {own}; "
        f"dataset {dataset!r}: total {_pair((ds.epsilon, ds.delta))}, "
        f"spent {_pair((ds.spent_epsilon, ds.spent_delta))}, left {_pair(ds.left())}; "
        "nothing was spent"
    )
