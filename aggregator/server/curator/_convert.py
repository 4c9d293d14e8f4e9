"""The service's answers as Curator messages (the servicer's only wire encoding)."""

from __future__ import annotations

import json
from fractions import Fraction

from deniable.aggregator.central.curator.service import (
    Answer,
    BalanceView,
    Charge,
    CuratorService,
    LedgerView,
    ReleaseAnswer,
)
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["analysts", "answer", "balance", "description", "ledger", "release"]


def _text(value: Fraction | None) -> str:
    return "" if value is None else str(value)


def _json(document: object) -> str:
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def charge(value: Charge) -> pb.Charge:
    """Exact ε and δ as fractions."""
    return pb.Charge(epsilon=_text(value.epsilon), delta=_text(value.delta))


def balance(value: BalanceView | None) -> pb.Balance | None:
    """A balance (None stays None); budgets the custodian does not have are empty strings."""
    return None if value is None else _balance(value)


def _balance(value: BalanceView) -> pb.Balance:
    return pb.Balance(
        analyst=value.analyst,
        epsilon_budget=_text(value.epsilon_budget),
        epsilon_spent=_text(value.epsilon_spent),
        delta_budget=_text(value.delta_budget),
        delta_spent=_text(value.delta_spent),
        dataset_epsilon_left=_text(value.dataset_epsilon_left),
        dataset_delta_left=_text(value.dataset_delta_left),
    )


def answer(value: Answer) -> pb.QueryResponse:
    """A query's answer, with its whole JSON document."""
    released = [
        pb.Released(
            key=item.key_json,
            value=0.0 if item.value is None else item.value,
            interval=pb.Interval(
                low=item.interval.get("low", 0.0),
                high=item.interval.get("high", 0.0),
                confidence=item.interval.get("confidence", 0.0),
                method=item.interval.get("method", ""),
                covers=item.interval.get("covers", ""),
            ),
        )
        for item in value.released
    ]
    return pb.QueryResponse(
        charge=charge(value.charge),
        released=released,
        balance=balance(value.balance),
        preview=value.preview,
        document_json=_json(value.document),
    )


def release(value: ReleaseAnswer) -> pb.ReleaseResponse:
    """A release: its id, charge and document."""
    return pb.ReleaseResponse(
        release_id=value.release_id,
        charge=charge(value.charge),
        balance=balance(value.balance),
        document_json=_json(value.document),
    )


def ledger(value: LedgerView) -> pb.LedgerResponse:
    """A balance and its spends."""
    return pb.LedgerResponse(
        dataset=value.dataset,
        balance=balance(value.balance),
        spends=[
            pb.Spend(
                at=spend.at,
                analyst=spend.analyst,
                query=spend.query,
                epsilon=_text(spend.epsilon),
                delta=_text(spend.delta),
            )
            for spend in value.spends
        ],
    )


def description(service: CuratorService) -> pb.DatasetDescription:
    """The data set's public description."""
    facts = service.describe()
    message = pb.DatasetDescription(
        dataset=facts["dataset"],
        columns=[pb.Column(name=name, kind=kind) for name, kind in facts["columns"].items()],
        privacy_unit=facts["privacy_unit"] or "",
        max_contributions=facts["max_contributions"],
        neighbours=facts["neighbours"],
        unit_description=facts["unit_description"],
    )
    rows = facts["rows"]
    if rows is not None:
        message.rows = rows
    return message


def analysts(service: CuratorService) -> pb.ListAnalystsResponse:
    """Every analyst's balance, and who is revoked."""
    listing = service.analysts()
    return pb.ListAnalystsResponse(
        dataset=listing.dataset,
        analysts=[_balance(item) for item in listing.balances],
        revoked=list(listing.revoked),
        dataset_epsilon_budget=_text(listing.epsilon_budget),
        dataset_delta_budget=_text(listing.delta_budget),
    )
