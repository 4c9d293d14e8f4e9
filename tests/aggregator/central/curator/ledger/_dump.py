"""Every row of the ledger's tables, for either backend: to check that a refusal changes nothing."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

TABLES = (
    "curator_schema_version",
    "curator_datasets",
    "curator_analysts",
    "curator_tokens",
    "curator_spends",
    "curator_imports",
    "curator_releases",
)


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Each curator_ table's rows, sorted."""
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
            return {
                t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES
            }
    import psycopg

    with psycopg.connect(url) as pg:
        return {
            t: sorted((tuple(r) for r in pg.execute(f"SELECT * FROM {t}").fetchall()), key=repr)
            for t in TABLES
        }
