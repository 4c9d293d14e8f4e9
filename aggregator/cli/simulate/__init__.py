"""``deniable-aggregator simulate``: a population through client and estimator."""

from __future__ import annotations

from deniable.aggregator.cli.simulate._command import simulate_command

__all__ = ["simulate_command"]
