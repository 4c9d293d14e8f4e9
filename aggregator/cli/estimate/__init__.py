"""``deniable-aggregator estimate``: estimates with intervals, once or watched."""

from __future__ import annotations

from deniable.aggregator.cli.estimate._command import estimate_command

__all__ = ["estimate_command"]
