"""The curator's transport-free service: a data set, its query kinds, the charge before noise.

Query kinds are one module each (``_count``, ``_histogram``, ``_numeric``), registered
by their wire name in ``_kinds.QUERY_KINDS``; the gRPC servicer and the in-process CLI
both go through :class:`CuratorService`.
"""

from __future__ import annotations

from deniable.aggregator.central.curator.ledger import CUSTODIAN
from deniable.aggregator.central.curator.service import (  # noqa: F401  (their registration)
    _count,
    _histogram,
    _numeric,
)
from deniable.aggregator.central.curator.service._dataset import Dataset
from deniable.aggregator.central.curator.service._kinds import (
    QUERY_KINDS,
    Query,
    QueryOptions,
    query_from_wire,
)
from deniable.aggregator.central.curator.service._register import check_totals, register_dataset
from deniable.aggregator.central.curator.service._release import (
    ReleaseQuery,
    answer_from_release,
    release_from_wire,
)
from deniable.aggregator.central.curator.service._results import (
    AnalystsView,
    Answer,
    BalanceView,
    Charge,
    LedgerView,
    ReleaseAnswer,
    ReleasedValue,
    SpendView,
)
from deniable.aggregator.central.curator.service._service import (
    CuratorService,
    ReleaseNotFoundError,
)

__all__ = [
    "CUSTODIAN",
    "QUERY_KINDS",
    "AnalystsView",
    "Answer",
    "BalanceView",
    "Charge",
    "CuratorService",
    "Dataset",
    "LedgerView",
    "Query",
    "QueryOptions",
    "ReleaseAnswer",
    "ReleaseNotFoundError",
    "ReleaseQuery",
    "ReleasedValue",
    "SpendView",
    "answer_from_release",
    "check_totals",
    "query_from_wire",
    "register_dataset",
    "release_from_wire",
]
