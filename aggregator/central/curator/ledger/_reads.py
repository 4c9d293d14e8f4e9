"""The ledger's reads: a dataset, a balance, the analysts, and the stored releases."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.ledger._charge import (
    ZERO,
    Totals,
    analyst_totals,
    dataset_totals,
    unknown,
)
from deniable.aggregator.central.curator.ledger._model import (
    CUSTODIAN,
    AnalystBudget,
    Balance,
    DatasetBudget,
    ReleaseSummary,
    SpendEntry,
    from_text,
)
from deniable.aggregator.central.curator.ledger._schema import Db

__all__ = [
    "analysts",
    "balance",
    "dataset",
    "new_release_id",
    "release",
    "release_text",
    "releases",
]


def dataset(db: Db, name: str) -> DatasetBudget | None:
    """The registered dataset, or None."""
    found = db.rows(
        "SELECT epsilon, delta, description, registered_at FROM curator_datasets WHERE name = ?",
        (name,),
    )
    if not found:
        return None
    epsilon, delta, description, at = found[0]
    return DatasetBudget(name, from_text(epsilon), from_text(delta), str(description), float(at))


def balance(db: Db, name: str, analyst: str | None) -> Balance:
    """The dataset's (``analyst`` None) or one analyst's budget, spent, left and spends."""
    ds = dataset_totals(db, name)
    if ds is None:
        raise unknown(name)
    ds_left = ds.left()
    sql = "SELECT at, analyst, query, epsilon, delta FROM curator_spends WHERE dataset = ?"
    params: tuple[str, ...] = (name,)
    if analyst is None:
        mine = ds
    else:
        found = analyst_totals(db, name, analyst)
        if found is None and analyst != CUSTODIAN:
            raise CuratorError(f"--analyst: {analyst!r} has no budget on dataset {name!r}")
        mine = found if found is not None else Totals(ds.epsilon, ds.delta, ZERO, ZERO)
        sql += " AND analyst = ?"
        params = (name, analyst)
    spends = tuple(
        SpendEntry(float(at), str(who), str(query), from_text(e), from_text(d))
        for at, who, query, e, d in db.rows(sql + " ORDER BY id", params)
    )
    left = mine.left()
    return Balance(
        dataset=name,
        analyst=analyst,
        epsilon=mine.epsilon,
        delta=mine.delta,
        spent_epsilon=mine.spent_epsilon,
        spent_delta=mine.spent_delta,
        left_epsilon=min(left[0], ds_left[0]),
        left_delta=min(left[1], ds_left[1]),
        dataset_left_epsilon=ds_left[0],
        dataset_left_delta=ds_left[1],
        spends=spends,
    )


def analysts(db: Db, name: str) -> list[AnalystBudget]:
    """Every analyst with a budget on the dataset, by name, with their last token's state."""
    if dataset_totals(db, name) is None:
        raise unknown(name)
    tokens: dict[str, tuple[float, float | None]] = {}
    for who, issued, revoked in db.rows(
        "SELECT analyst, issued_at, revoked_at FROM curator_tokens WHERE dataset = ? "
        "ORDER BY issued_at, revoked_at IS NULL",
        (name,),
    ):
        tokens[str(who)] = (float(issued), None if revoked is None else float(revoked))
    result = []
    for who, e, d, spent_e, spent_d in db.rows(
        "SELECT name, epsilon, delta, spent_epsilon, spent_delta FROM curator_analysts "
        "WHERE dataset = ? ORDER BY name",
        (name,),
    ):
        issued, revoked = tokens.get(str(who), (None, None))
        result.append(
            AnalystBudget(
                name=str(who),
                epsilon=from_text(e),
                delta=from_text(d),
                spent_epsilon=from_text(spent_e),
                spent_delta=from_text(spent_d),
                live=issued is not None and revoked is None,
                issued_at=issued,
                revoked_at=revoked,
            )
        )
    return result


def new_release_id() -> str:
    """``r-`` and 12 random hex digits."""
    return "r-" + secrets.token_hex(6)


def release_text(document: Mapping[str, Any]) -> tuple[str, str]:
    """A release document as stored (JSON) and its one-line summary."""
    if not isinstance(document, Mapping):
        raise CuratorError(f"a release is a JSON object, got {type(document).__name__}")
    try:
        text = json.dumps(dict(document), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise CuratorError(f"a release must be a JSON document ({error})") from None
    parts = []
    if isinstance(document.get("format"), str):
        parts.append(str(document["format"]))
    columns = document.get("columns")
    if isinstance(columns, list):
        names = [str(c.get("name")) for c in columns if isinstance(c, Mapping)]
        parts.append("columns " + ", ".join(names))
    if isinstance(document.get("epsilon"), int | float | str):
        parts.append(f"epsilon {document['epsilon']}")
    cells = document.get("cells")
    if isinstance(cells, list):
        parts.append(f"{len(cells)} cells")
    return text, "; ".join(parts) or "a release"


def release(db: Db, name: str, release_id: str) -> dict[str, Any] | None:
    """A stored release's document, or None."""
    found = db.rows(
        "SELECT document FROM curator_releases WHERE dataset = ? AND id = ?", (name, release_id)
    )
    if not found:
        return None
    document: dict[str, Any] = json.loads(found[0][0])
    return document


def releases(db: Db, name: str) -> list[ReleaseSummary]:
    """The dataset's releases, oldest first."""
    if dataset_totals(db, name) is None:
        raise unknown(name)
    return [
        ReleaseSummary(str(rid), str(who), float(at), str(summary))
        for rid, who, at, summary in db.rows(
            "SELECT id, analyst, at, summary FROM curator_releases WHERE dataset = ? "
            "ORDER BY at, id",
            (name,),
        )
    ]
