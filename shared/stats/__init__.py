"""Statistics both sides use: binomial intervals, confidence sequences, estimands, the simplex.

scipy is imported inside the functions that need it (interval quantiles), so that the
participant's install and start-up never load it.
"""

from __future__ import annotations

from deniable.shared.stats._estimands import ESTIMANDS, Estimand, check_estimand
from deniable.shared.stats._intervals import (
    MAX_CONFIDENCE,
    METHODS,
    binomial_interval,
    check_method,
    normal_quantile,
)
from deniable.shared.stats._sequences import (
    RATE_METHOD,
    anytime_coverage,
    anytime_rate_interval,
)
from deniable.shared.stats._simplex import project_to_simplex

__all__ = [
    "ESTIMANDS",
    "MAX_CONFIDENCE",
    "METHODS",
    "RATE_METHOD",
    "Estimand",
    "anytime_coverage",
    "anytime_rate_interval",
    "binomial_interval",
    "check_estimand",
    "check_method",
    "normal_quantile",
    "project_to_simplex",
]
