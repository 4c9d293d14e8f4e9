"""The curator's service: check, charge, then answer; the same in the daemon and in-process."""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from fractions import Fraction

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import CustodianLedger
from deniable.aggregator.central.curator.service._dataset import Dataset, Description
from deniable.aggregator.central.curator.service._kinds import Query
from deniable.aggregator.central.curator.service._ledger_views import (
    analysts_view,
    balance_view,
    ledger_view,
)
from deniable.aggregator.central.curator.service._release import ReleaseQuery
from deniable.aggregator.central.curator.service._results import (
    AnalystsView,
    Answer,
    BalanceView,
    Charge,
    LedgerView,
    ReleaseAnswer,
)
from deniable.shared.sampling import ByteSource, os_source

__all__ = ["CuratorService", "ReleaseNotFoundError"]

log = logging.getLogger("deniable.curator")


class ReleaseNotFoundError(CuratorError):
    """No stored release of this data set has that id."""


class CuratorService:
    """One data set's queries, each charged to the ledger before any noise is drawn.

    Order of a query: check it against the columns (no data read), spend its ε (and δ)
    from the analyst's budget and the data set's in one transaction, then read the data
    and draw the noise. A refused spend reads no data; a failure after the spend releases
    nothing and is not refunded. ``charge=False`` with a seeded ``source`` is the
    custodian's in-process test mode: NOT private, never charged; the daemon never uses it.
    """

    def __init__(self, dataset: Dataset, ledger: CustodianLedger | None) -> None:
        self.dataset = dataset
        self._ledger = ledger

    @property
    def ledger(self) -> CustodianLedger:
        """The custodian's ledger (a seeded, uncharged service has none)."""
        if self._ledger is None:
            raise CuratorError("no ledger: seeded noise is not private and is never charged")
        return self._ledger

    @property
    def name(self) -> str:
        """The registered data set name."""
        return self.dataset.name

    def close(self) -> None:
        """Close the engine and the ledger."""
        self.dataset.engine.close()
        if self._ledger is not None:
            self._ledger.close()

    def describe(self) -> Description:
        """The public description (columns, unit, neighbours, N when public)."""
        return self.dataset.describe()

    def authenticate(self, token: str) -> str | None:
        """The analyst a live token of THIS data set names, else None."""
        found = self.ledger.authenticate(token)
        if found is None or found.dataset != self.name:
            return None
        return found.name

    def query(
        self, analyst: str, query: Query, *, source: ByteSource = os_source, charge: bool = True
    ) -> Answer:
        """Check, charge (unless a preview, or ``charge=False``), then run ``query``."""
        query.check(self.dataset)
        cost = query.charge()
        if query.options.preview:
            answer = query.preview(self.dataset)
            privacy = {"preview": True, "would_spend": cost.to_dict(), "spent": None}
            return replace(answer, document={**answer.document, "privacy": privacy})
        balance = self._spend(analyst, cost, query.describe()) if charge else None
        answer = query.run(self.dataset, source)
        log.info("released", extra={"analyst": analyst, "query": query.describe()})
        document = {**answer.document, "privacy": self._privacy(analyst, cost, balance)}
        return replace(answer, document=document, balance=balance)

    def release(
        self,
        analyst: str,
        request: ReleaseQuery,
        *,
        source: ByteSource = os_source,
        charge: bool = True,
    ) -> ReleaseAnswer:
        """A noisy contingency table, charged once, stored with the custodian (when charged)."""
        request.check(self.dataset)
        cost = request.charge()
        balance = self._spend(analyst, cost, request.describe()) if charge else None
        document = request.run(self.dataset, source)
        release_id = self.ledger.save_release(self.name, analyst, document) if charge else ""
        document = {**document, "privacy": self._privacy(analyst, cost, balance)}
        return ReleaseAnswer(release_id, cost, document, balance)

    def get_release(self, release_id: str) -> ReleaseAnswer:
        """A stored release of this data set (free)."""
        document = self.ledger.release(self.name, release_id)
        if document is None:
            raise ReleaseNotFoundError(f"no release {release_id!r} of data set {self.name!r}")
        return ReleaseAnswer(release_id, Charge(Fraction(0)), document)

    def ledger_of(self, analyst: str) -> LedgerView:
        """An analyst's balance and spends."""
        return ledger_view(self.name, self.ledger.balance(self.name, analyst), analyst)

    def issue_token(self, analyst: str, epsilon: float, delta: float) -> tuple[str, BalanceView]:
        """A new token for ``analyst`` with budget (ε, δ) within the data set's; shown once."""
        from deniable.aggregator.central.curator._noise import exact_epsilon

        if not 0 < epsilon < math.inf:  # also refuses NaN
            raise CuratorError(f"--budget must be a finite number > 0, got {epsilon!r}")
        token = self.ledger.issue_token(
            self.name, analyst, exact_epsilon(epsilon), _exact_delta(delta)
        )
        return token, balance_view(self.ledger.balance(self.name, analyst), analyst)

    def revoke_token(self, analyst: str) -> LedgerView:
        """Revoke ``analyst``'s token; their spends stay counted."""
        self.ledger.revoke_token(self.name, analyst)
        return self.ledger_of(analyst)

    def analysts(self) -> AnalystsView:
        """Every analyst's balance."""
        return analysts_view(self.name, self.ledger)

    def _privacy(
        self, analyst: str, cost: Charge, balance: BalanceView | None
    ) -> dict[str, object]:
        """The privacy record of a released answer (its document's ``privacy``)."""
        return {
            "private": True,
            "dataset": self.name,
            "analyst": analyst,
            "charge": cost.to_dict(),
            "balance": None if balance is None else balance.to_dict(),
            "adversary": (
                "anyone who reads this answer (the analyst included): central ε-DP against "
                "all rows of one privacy unit"
            ),
        }

    def _spend(self, analyst: str, charge: Charge, text: str) -> BalanceView:
        return balance_view(
            self.ledger.spend(self.name, analyst, charge.epsilon, charge.delta, text), analyst
        )


def _exact_delta(delta: float) -> Fraction:
    """δ as the decimal written (0 allowed), else an error naming --delta."""
    if not 0 <= delta < 1:  # also refuses NaN
        raise CuratorError(f"--delta must be in [0, 1), got {delta!r}")
    return Fraction(repr(float(delta))) if delta else Fraction(0)
