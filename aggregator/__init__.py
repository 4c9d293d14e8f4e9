"""Aggregator side of deniable: debiased estimates, confidence intervals, planning."""

try:
    import scipy  # noqa: F401  (the server-side extra; the participant install omits it)
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the aggregator needs scipy; install it with: pip install 'deniable[aggregator]'"
    ) from error

from aggregator._coverage import exact_coverage, exact_moments, report_count_pmf
from aggregator._intervals import METHODS
from aggregator._planner import Plan, margin_achieved, participants_needed, plan
from aggregator._proportion import ProportionEstimate, estimate_proportion
from aggregator._simulate import SimulationResult, simulate_binary

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
