"""SQLite's report-id index: filters in memory, sealed segments on disk, and their upkeep."""

from __future__ import annotations

from deniable.aggregator.storage.sqlite.index._filter import patterns
from deniable.aggregator.storage.sqlite.index._id_index import Claim, GroupClaim, IdIndex
from deniable.aggregator.storage.sqlite.index._maintenance import (
    DamagedLogError,
    Maintenance,
    load_survey,
)
from deniable.aggregator.storage.sqlite.index._segments import delete_segments
from deniable.aggregator.storage.sqlite.index._survey_ids import SEGMENT_IDS, SurveyIds

__all__ = [
    "SEGMENT_IDS",
    "Claim",
    "DamagedLogError",
    "GroupClaim",
    "IdIndex",
    "Maintenance",
    "SurveyIds",
    "delete_segments",
    "load_survey",
    "patterns",
]
