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
from deniable.aggregator.storage._copy import (
    CopyRefusedError,
    CopySource,
    CopySummary,
    CopyTarget,
    copy,
    source_reports,
    writing,
)
from deniable.aggregator.storage._replay import Asked, StoredSurvey, replay_group
from deniable.aggregator.storage._survey_cap import MAX_REPORTS, check_max_reports
from deniable.aggregator.storage._url import (
    POSTGRES_EXTRA,
    data_dir,
    default_database_url,
    open_reader,
    open_storage,
    upgrade,
)

__all__ = [
    "MAX_REPORTS",
    "POSTGRES_EXTRA",
    "Asked",
    "CopyRefusedError",
    "CopySource",
    "CopySummary",
    "CopyTarget",
    "ReportGroup",
    "Selection",
    "Storage",
    "StorageError",
    "StoredSurvey",
    "Submission",
    "SubmitOutcome",
    "Tally",
    "Unread",
    "check_max_reports",
    "copy",
    "data_dir",
    "default_database_url",
    "open_reader",
    "open_storage",
    "replay_group",
    "source_reports",
    "upgrade",
    "writing",
]
