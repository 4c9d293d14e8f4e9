"""The curator's query engine: exact, contribution-bounded aggregates over a data source.

Conditions and group keys are parsed with sqlglot and checked against an allow-list
(``parse_condition``, ``parse_key``); ``open_engine`` opens a CSV or Parquet file through
DuckDB or a PostgreSQL table, and its ``Engine`` answers counts, histograms, sums and
contingency tables after bounding each privacy unit to K rows. No noise is drawn here.
"""

from __future__ import annotations

from deniable.aggregator.central.curator.engine._base import BOUNDING_RULE, Engine, SumAggregate
from deniable.aggregator.central.curator.engine._check import ConditionError
from deniable.aggregator.central.curator.engine._source import SOURCE_KINDS, open_engine
from deniable.aggregator.central.curator.engine._sql import (
    Condition,
    Key,
    and_,
    equals,
    literal_for,
    parse_condition,
    parse_key,
)

__all__ = [
    "BOUNDING_RULE",
    "SOURCE_KINDS",
    "Condition",
    "ConditionError",
    "Engine",
    "Key",
    "SumAggregate",
    "and_",
    "equals",
    "literal_for",
    "open_engine",
    "parse_condition",
    "parse_key",
]
