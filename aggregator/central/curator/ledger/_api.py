"""The custodian's ledger as one interface: datasets, analysts' tokens, spends and releases."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator.ledger._model import (
    Analyst,
    AnalystBudget,
    Balance,
    DatasetBudget,
    ReleaseSummary,
    SpendEntry,
)

__all__ = ["CustodianLedger"]


class CustodianLedger(ABC):
    """The privacy budget, kept by the custodian and keyed by dataset name and analyst.

    A dataset is registered once with its total (ε, δ). The custodian issues each analyst
    a token with a budget within that total; every query is charged with :meth:`spend`
    before any noise is drawn, which refuses unless both the analyst's budget and the
    dataset's total (over all analysts) still cover it. Values are exact Fractions; a
    float is taken as the decimal it is written as. Times are UTC seconds. Errors are
    :class:`~deniable.aggregator.central.curator.CuratorError` subclasses.
    """

    @abstractmethod
    def register(
        self, dataset: str, epsilon: Fraction, delta: Fraction, *, description: str
    ) -> DatasetBudget:
        """Register a dataset's total (ε, δ); again with the same totals returns it.

        Raises:
            CuratorError: a bad name or value, or totals other than the registered ones
                (a dataset's budget cannot change).
        """

    @abstractmethod
    def dataset(self, dataset: str) -> DatasetBudget | None:
        """The registered dataset, or None."""

    @abstractmethod
    def issue_token(self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction) -> str:
        """A new token for ``analyst`` with budget (ε, δ) within the dataset's total.

        Only its SHA-256 is stored: the token is shown once. An analyst whose token was
        revoked may get a new one (with a new budget); their spends stay counted.

        Raises:
            CuratorError: unregistered dataset, bad or reserved name, a budget beyond the
                dataset's total, or the analyst already has a live token (revoke it first).
        """

    @abstractmethod
    def revoke_token(self, dataset: str, analyst: str) -> None:
        """The analyst's live token stops working; their spends stay counted.

        Raises:
            CuratorError: the analyst has no live token on the dataset.
        """

    @abstractmethod
    def authenticate(self, token: str) -> Analyst | None:
        """The (dataset, analyst) of a live token; None for any other string."""

    @abstractmethod
    def spend(
        self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction, query: str
    ) -> Balance:
        """Charge (ε, δ) for ``query`` atomically, before any noise is drawn.

        Accepted only if the analyst's spent + ε <= their budget and the dataset's spent
        (by everyone) + ε <= its total, and likewise for δ. The analyst ``"custodian"``
        needs no token and is bounded by the dataset's total only; any other analyst
        needs a live token. Returns the analyst's balance after the spend.

        Raises:
            BudgetExceededError: over a budget; the message gives what was asked, spent
                and left for the analyst and the dataset, and that nothing was spent.
            CuratorError: unknown dataset or analyst, a revoked token, a bad value.
        """

    @abstractmethod
    def import_spends(
        self,
        dataset: str,
        spends: Sequence[SpendEntry],
        *,
        source: str,
        register: tuple[Fraction, Fraction, str] | None = None,
    ) -> Balance:
        """Record past spends (their own times) all at once or not at all; for migration.

        Each entry's analyst must be ``"custodian"`` or hold a budget; the same two-level
        check as :meth:`spend` applies to their sum. ``source`` names where they come from
        and can be imported once. ``register``: (ε, δ, description) to register the
        dataset with, in the same transaction, if it is not registered. Returns the
        dataset's balance.

        Raises:
            AlreadyImportedError: ``source`` was imported before (its dataset is named).
            BudgetExceededError: the spends do not fit; nothing was recorded.
        """

    @abstractmethod
    def balance(self, dataset: str, analyst: str | None = None) -> Balance:
        """Totals, spent, left and the spends: of one analyst, or (None) of the dataset."""

    @abstractmethod
    def analysts(self, dataset: str) -> list[AnalystBudget]:
        """Every analyst with a budget on the dataset (and the custodian once it spent)."""

    @abstractmethod
    def save_release(self, dataset: str, analyst: str, document: Mapping[str, Any]) -> str:
        """Store a release's JSON document with the custodian; its id (``r-`` + 12 hex)."""

    @abstractmethod
    def release(self, dataset: str, release_id: str) -> dict[str, Any] | None:
        """A stored release's document, or None if the dataset has no such release."""

    @abstractmethod
    def releases(self, dataset: str) -> list[ReleaseSummary]:
        """The dataset's stored releases, oldest first."""

    @abstractmethod
    def close(self) -> None:
        """Release the database connections (the ledger cannot be used after)."""

    def __enter__(self) -> CustodianLedger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
