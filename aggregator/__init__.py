"""Aggregator side of deniable: debiased estimates, confidence intervals, planning."""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if importlib.util.find_spec("scipy") is None:  # pragma: no cover - only without the extra
    raise ImportError(
        "the aggregator needs scipy; install it with: pip install 'deniable[aggregator]'"
    )

if TYPE_CHECKING:
    from deniable.aggregator.analysis._coverage import (
        exact_coverage,
        exact_moments,
        report_count_pmf,
    )
    from deniable.aggregator.analysis._intervals import METHODS
    from deniable.aggregator.analysis._planner import (
        Plan,
        margin_achieved,
        participants_needed,
        plan,
    )
    from deniable.aggregator.analysis._proportion import ProportionEstimate, estimate_proportion
    from deniable.aggregator.analysis._simulate import SimulationResult, simulate_binary

# Each public name and its module, imported on first use (PEP 562), so that commands
# and the daemon load only what they need: the statistics pull in scipy, which adds
# 0.3 s or more to the start of every command that imports it.
_EXPORTS = {
    "METHODS": "deniable.aggregator.analysis._intervals",
    "Plan": "deniable.aggregator.analysis._planner",
    "ProportionEstimate": "deniable.aggregator.analysis._proportion",
    "SimulationResult": "deniable.aggregator.analysis._simulate",
    "estimate_proportion": "deniable.aggregator.analysis._proportion",
    "exact_coverage": "deniable.aggregator.analysis._coverage",
    "exact_moments": "deniable.aggregator.analysis._coverage",
    "margin_achieved": "deniable.aggregator.analysis._planner",
    "participants_needed": "deniable.aggregator.analysis._planner",
    "plan": "deniable.aggregator.analysis._planner",
    "report_count_pmf": "deniable.aggregator.analysis._coverage",
    "simulate_binary": "deniable.aggregator.analysis._simulate",
}
__all__ = [
    "METHODS",
    "Plan",
    "ProportionEstimate",
    "SimulationResult",
    "estimate_proportion",
    "exact_coverage",
    "exact_moments",
    "margin_achieved",
    "participants_needed",
    "plan",
    "report_count_pmf",
    "simulate_binary",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aggregator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
