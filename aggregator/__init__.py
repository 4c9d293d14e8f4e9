"""Aggregator side of deniable: the daemon, storage, estimates, planning and simulation.

Names are imported on first use (PEP 562), so that commands and the daemon load only what
they need: the statistics pull in scipy, which adds 0.3 s or more to the start of every
command that imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deniable.shared._lazy import lazy_exports


def require_extra() -> None:
    """Raise ImportError, one line with the install command, when the extra is missing.

    Importing this package never fails (the ``deniable-aggregator`` command must start to
    say what is missing); its names check on first use.
    """
    from deniable.aggregator.cli._extra import INSTALL, missing_extra

    missing = missing_extra()
    if missing:
        raise ImportError(
            f"the aggregator needs {', '.join(missing)} (not installed); install it with: {INSTALL}"
        )


if TYPE_CHECKING:
    from deniable.aggregator.analysis.check import CheckReport, check
    from deniable.aggregator.analysis.planning import (
        KindPlan,
        Plan,
        margin_achieved,
        participants_needed,
        plan,
        plan_question,
    )
    from deniable.aggregator.analysis.simulation import (
        CategoricalSimulation,
        NumericSimulation,
        SimulationResult,
        simulate_binary,
        simulate_categorical,
        simulate_numeric,
    )
    from deniable.aggregator.server import AggregatorService, RunningServer, start_server
    from deniable.aggregator.storage import Storage, open_storage
    from deniable.shared.mechanisms import ProportionEstimate, estimate_proportion
    from deniable.shared.mechanisms._rr_coverage import (
        exact_coverage,
        exact_moments,
        report_count_pmf,
    )
    from deniable.shared.stats import METHODS

_ANALYSIS = "deniable.aggregator.analysis"
_EXPORTS = {
    "AggregatorService": "deniable.aggregator.server",
    "CategoricalSimulation": f"{_ANALYSIS}.simulation",
    "CheckReport": f"{_ANALYSIS}.check",
    "KindPlan": f"{_ANALYSIS}.planning",
    "METHODS": "deniable.shared.stats",
    "NumericSimulation": f"{_ANALYSIS}.simulation",
    "Plan": f"{_ANALYSIS}.planning",
    "ProportionEstimate": "deniable.shared.mechanisms",
    "RunningServer": "deniable.aggregator.server",
    "SimulationResult": f"{_ANALYSIS}.simulation",
    "Storage": "deniable.aggregator.storage",
    "check": f"{_ANALYSIS}.check",
    "estimate_proportion": "deniable.shared.mechanisms",
    "exact_coverage": "deniable.shared.mechanisms._rr_coverage",
    "exact_moments": "deniable.shared.mechanisms._rr_coverage",
    "margin_achieved": f"{_ANALYSIS}.planning",
    "open_storage": "deniable.aggregator.storage",
    "participants_needed": f"{_ANALYSIS}.planning",
    "plan": f"{_ANALYSIS}.planning",
    "plan_question": f"{_ANALYSIS}.planning",
    "report_count_pmf": "deniable.shared.mechanisms._rr_coverage",
    "simulate_binary": f"{_ANALYSIS}.simulation",
    "simulate_categorical": f"{_ANALYSIS}.simulation",
    "simulate_numeric": f"{_ANALYSIS}.simulation",
    "start_server": "deniable.aggregator.server",
}
__all__ = [
    "METHODS",
    "AggregatorService",
    "CategoricalSimulation",
    "CheckReport",
    "KindPlan",
    "NumericSimulation",
    "Plan",
    "ProportionEstimate",
    "RunningServer",
    "SimulationResult",
    "Storage",
    "check",
    "estimate_proportion",
    "exact_coverage",
    "exact_moments",
    "margin_achieved",
    "open_storage",
    "participants_needed",
    "plan",
    "plan_question",
    "report_count_pmf",
    "simulate_binary",
    "simulate_categorical",
    "simulate_numeric",
    "start_server",
]


_attribute, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        require_extra()
    return _attribute(name)
