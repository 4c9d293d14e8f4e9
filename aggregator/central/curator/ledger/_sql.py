"""The ledger over SQL, for either backend: the backend gives transactions, this the rules."""

from __future__ import annotations

import hmac
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger import _reads
from deniable.aggregator.central.curator.ledger._api import CustodianLedger
from deniable.aggregator.central.curator.ledger._charge import (
    charge,
    dataset_totals,
    has_live_token,
    unknown,
)
from deniable.aggregator.central.curator.ledger._model import (
    TOKEN_PREFIX,
    AlreadyImportedError,
    Analyst,
    AnalystBudget,
    Balance,
    DatasetBudget,
    ReleaseSummary,
    SpendEntry,
    check_analyst,
    check_dataset,
    exact,
    new_token,
    shown,
    to_text,
    token_hash,
)
from deniable.aggregator.central.curator.ledger._schema import Db

__all__ = ["SqlLedger"]

_LONGEST_TOKEN = 256  # a longer string is no token this ledger issued (43 characters + prefix)


class SqlLedger(CustodianLedger):
    """The rules of :class:`CustodianLedger` over a backend's transactions."""

    name: str  # the database for messages (no password)

    @abstractmethod
    def _write(self) -> AbstractContextManager[Db]:
        """A read-write transaction; concurrent writers to a dataset's row take turns."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Db]:
        """A read-only transaction on one snapshot."""

    def register(
        self, dataset: str, epsilon: Fraction, delta: Fraction, *, description: str
    ) -> DatasetBudget:
        name, eps, dlt, _ = _total(dataset, epsilon, delta, description)
        with self._write() as db:
            _insert_dataset(db, name, eps, dlt, description)
            found = _reads.dataset(db, name)
        assert found is not None
        if (found.epsilon, found.delta) != (eps, dlt):
            raise CuratorError(
                f"--budget: dataset {name!r} is registered with ε={shown(found.epsilon)}, "
                f"δ={shown(found.delta)}; it cannot be registered again with "
                f"ε={shown(eps)}, δ={shown(dlt)}: a dataset's budget cannot change "
                "(neither raised nor lowered)"
            )
        return found

    def dataset(self, dataset: str) -> DatasetBudget | None:
        name = check_dataset(dataset)
        with self._read() as db:
            return _reads.dataset(db, name)

    def issue_token(self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction) -> str:
        name = check_dataset(dataset)
        who = check_analyst(analyst)
        eps = exact(epsilon, "--budget", positive=True)
        dlt = exact(delta, "--delta", positive=False)
        token = new_token()
        with self._write() as db:
            total = dataset_totals(db, name, lock=True)
            if total is None:
                raise unknown(name)
            if eps > total.epsilon or dlt > total.delta:
                raise CuratorError(
                    f"--budget: the budget ε={shown(eps)}, δ={shown(dlt)} of analyst {who!r} "
                    f"exceeds the total ε={shown(total.epsilon)}, "
                    f"δ={shown(total.delta)} of dataset {name!r}"
                )
            if has_live_token(db, name, who):
                raise CuratorError(
                    f"--analyst: {who!r} already has a live token on dataset {name!r}; "
                    "revoke it first (their spends stay counted)"
                )
            zero = to_text(Fraction(0))
            db.run(
                "INSERT INTO curator_analysts "
                "(dataset, name, epsilon, delta, spent_epsilon, spent_delta) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (dataset, name) "
                "DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta",
                (name, who, to_text(eps), to_text(dlt), zero, zero),
            )
            db.run(
                "INSERT INTO curator_tokens (hash, dataset, analyst, issued_at) "
                "VALUES (?, ?, ?, ?)",
                (token_hash(token), name, who, time.time()),
            )
        return token

    def revoke_token(self, dataset: str, analyst: str) -> None:
        name = check_dataset(dataset)
        who = check_analyst(analyst)
        with self._write() as db:
            if dataset_totals(db, name, lock=True) is None:
                raise unknown(name)
            revoked = db.run(
                "UPDATE curator_tokens SET revoked_at = ? "
                "WHERE dataset = ? AND analyst = ? AND revoked_at IS NULL",
                (time.time(), name, who),
            )
        if not revoked:
            raise CuratorError(f"--analyst: {who!r} has no live token on dataset {name!r}")

    def authenticate(self, token: str) -> Analyst | None:
        if (
            not isinstance(token, str)
            or not token.startswith(TOKEN_PREFIX)
            or len(token) > _LONGEST_TOKEN
        ):
            return None
        wanted = token_hash(token)
        with self._read() as db:
            found = db.rows(
                "SELECT hash, dataset, analyst FROM curator_tokens "
                "WHERE hash = ? AND revoked_at IS NULL",
                (wanted,),
            )
        if not found or not hmac.compare_digest(bytes(found[0][0]), wanted):
            return None
        return Analyst(str(found[0][1]), str(found[0][2]))

    def spend(
        self, dataset: str, analyst: str, epsilon: Fraction, delta: Fraction, query: str
    ) -> Balance:
        name = check_dataset(dataset)
        who = check_analyst(analyst, custodian=True)
        entry = SpendEntry(
            time.time(),
            who,
            str(query),
            exact(epsilon, "epsilon", positive=True),
            exact(delta, "delta", positive=False),
        )
        with self._write() as db:
            charge(db, name, [entry], live=True)
            return _reads.balance(db, name, who)

    def import_spends(
        self,
        dataset: str,
        spends: Sequence[SpendEntry],
        *,
        source: str,
        register: tuple[Fraction, Fraction, str] | None = None,
    ) -> Balance:
        name = check_dataset(dataset)
        total = None if register is None else _total(dataset, *register)
        entries = [
            SpendEntry(
                float(s.at),
                check_analyst(s.analyst, custodian=True),
                str(s.query),
                exact(s.epsilon, "epsilon", positive=True),
                exact(s.delta, "delta", positive=False),
            )
            for s in spends
        ]
        with self._write() as db:
            if dataset_totals(db, name, lock=True) is None:
                if total is None:
                    raise unknown(name)
                _insert_dataset(db, *total)
            added = db.run(
                "INSERT INTO curator_imports (source, dataset, at) VALUES (?, ?, ?) "
                "ON CONFLICT (source) DO NOTHING",
                (source, name, time.time()),
            )
            if not added:
                (into,) = db.rows(
                    "SELECT dataset FROM curator_imports WHERE source = ?", (source,)
                )[0]
                raise AlreadyImportedError(
                    f"{source} was already moved to dataset {into!r}", str(into)
                )
            if entries:
                charge(db, name, entries, live=False)
            return _reads.balance(db, name, None)

    def balance(self, dataset: str, analyst: str | None = None) -> Balance:
        name = check_dataset(dataset)
        who = None if analyst is None else check_analyst(analyst, custodian=True)
        with self._read() as db:
            return _reads.balance(db, name, who)

    def analysts(self, dataset: str) -> list[AnalystBudget]:
        name = check_dataset(dataset)
        with self._read() as db:
            return _reads.analysts(db, name)

    def save_release(self, dataset: str, analyst: str, document: Mapping[str, Any]) -> str:
        name = check_dataset(dataset)
        who = check_analyst(analyst, custodian=True)
        text, summary = _reads.release_text(document)
        release_id = _reads.new_release_id()
        with self._write() as db:
            if dataset_totals(db, name) is None:
                raise unknown(name)
            db.run(
                "INSERT INTO curator_releases (id, dataset, analyst, at, summary, document) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (release_id, name, who, time.time(), summary, text),
            )
        return release_id

    def release(self, dataset: str, release_id: str) -> dict[str, Any] | None:
        name = check_dataset(dataset)
        with self._read() as db:
            return _reads.release(db, name, str(release_id))

    def releases(self, dataset: str) -> list[ReleaseSummary]:
        name = check_dataset(dataset)
        with self._read() as db:
            return _reads.releases(db, name)


def _total(
    dataset: str, epsilon: Fraction, delta: Fraction, description: str
) -> tuple[str, Fraction, Fraction, str]:
    """A dataset's checked name, total (ε, δ) and description."""
    name = check_dataset(dataset)
    eps = exact(epsilon, "--budget", positive=True)
    dlt = exact(delta, "--delta", positive=False)
    if dlt >= 1:
        raise CuratorError(f"--delta must be < 1, got {shown(dlt)}")
    if not isinstance(description, str):
        raise CuratorError(f"--description must be text, got {description!r}")
    return name, eps, dlt, description


def _insert_dataset(db: Db, name: str, eps: Fraction, dlt: Fraction, description: str) -> None:
    """Register the dataset unless it is registered (the caller compares the totals)."""
    zero = to_text(Fraction(0))
    db.run(
        "INSERT INTO curator_datasets (name, epsilon, delta, spent_epsilon, spent_delta, "
        "description, registered_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (name) DO NOTHING",
        (name, to_text(eps), to_text(dlt), zero, zero, description, time.time()),
    )
