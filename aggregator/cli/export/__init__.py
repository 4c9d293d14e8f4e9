"""``deniable-aggregator export``: estimates or stored reports as CSV, JSON or Parquet."""

from __future__ import annotations

from deniable.aggregator.cli.export._command import export_command

__all__ = ["export_command"]
