"""``deniable-aggregator plan``: participants for a margin, or the margin for n."""

from __future__ import annotations

from deniable.aggregator.cli.plan._command import plan_command

__all__ = ["plan_command"]
