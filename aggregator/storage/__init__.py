"""Durable storage for surveys, reports and running tallies, behind one interface."""

from __future__ import annotations

from deniable.aggregator.storage._base import (
    ReportGroup,
    Selection,
    Storage,
    StorageError,
    Submission,
    SubmitOutcome,
    Tally,
    Unread,
)
from deniable.aggregator.storage._url import default_database_url, open_storage

__all__ = [
    "ReportGroup",
    "Selection",
    "Storage",
    "StorageError",
    "Submission",
    "SubmitOutcome",
    "Tally",
    "Unread",
    "default_database_url",
    "open_storage",
]
