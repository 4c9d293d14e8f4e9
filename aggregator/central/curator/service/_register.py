"""Registering the served data set's budget with the ledger (once; it never changes)."""

from __future__ import annotations

import math
from fractions import Fraction

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator._noise import exact_epsilon
from deniable.aggregator.central.curator.ledger import CustodianLedger, DatasetBudget
from deniable.aggregator.central.curator.service._dataset import Dataset

__all__ = ["check_totals", "register_dataset"]


def check_totals(budget: float | None, delta: float | None) -> None:
    """Refuse a budget or δ that cannot be a data set's total (before anything opens)."""
    if budget is not None and (isinstance(budget, bool) or not 0 < budget < math.inf):
        raise CuratorError(f"--budget must be a finite number > 0, got {budget!r}")
    if delta is not None:
        _delta(delta)


def register_dataset(
    ledger: CustodianLedger, dataset: Dataset, budget: float | None, delta: float | None
) -> DatasetBudget:
    """The data set's registered budget; ``budget`` (and ``delta``) register it the first time.

    Without ``budget`` the data set must be registered already. With it, it must equal
    the registered total: a budget cannot be raised (nor lowered) once queries spent it.
    """
    check_totals(budget, delta)
    registered = ledger.dataset(dataset.name)
    if budget is None:
        if registered is None:
            raise CuratorError(
                f"no privacy budget is set for data set {dataset.name!r}: give --budget E "
                "(the total ε all its queries may spend; it cannot change afterwards)"
            )
        if delta is not None and _delta(delta) != registered.delta:
            raise CuratorError(
                f"--delta {delta!r} differs from data set {dataset.name!r}'s registered δ"
            )
        return registered
    total = exact_epsilon(budget)
    if delta is None:
        wanted = registered.delta if registered is not None else Fraction(0)
    else:
        wanted = _delta(delta)
    return ledger.register(dataset.name, total, wanted, description=dataset.engine.description)


def _delta(delta: float) -> Fraction:
    if not 0 <= delta < 1:
        raise CuratorError(f"--delta must be in [0, 1), got {delta!r}")
    return Fraction(repr(float(delta))) if delta else Fraction(0)
