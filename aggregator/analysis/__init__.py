"""Analysis on top of the stored tallies: estimates, planning, simulation and the tally check.

The trusted curator's queries (``_curator_*``) are re-exported here, imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.aggregator.analysis._curator_ledger import (
        Budget,
        BudgetExceededError,
        Ledger,
        Spend,
        default_ledger_path,
    )
    from deniable.aggregator.analysis._curator_noise import (
        NoisyCount,
        central_laplace_count,
        clamp_bias,
        continuous_half_width,
        discrete_half_width,
        discrete_laplace_pmf,
        discrete_laplace_tail,
        exact_epsilon,
        noise_scale,
    )
    from deniable.aggregator.analysis._curator_numeric import (
        NoisyMean,
        NoisySum,
        SumSpec,
        mean_interval,
        noisy_mean,
        noisy_sum,
    )
    from deniable.aggregator.analysis._curator_queries import (
        NEIGHBOURS,
        count_sensitivity,
        histogram_sensitivity,
        noisy_count,
        noisy_histogram,
        parse_values,
    )
    from deniable.aggregator.analysis._curator_release import (
        Release,
        ReleasedAnswer,
        make_release,
        read_release,
    )
    from deniable.aggregator.analysis._curator_table import (
        CuratorError,
        Table,
        file_digest,
        load_table,
        parse_types,
    )
    from deniable.aggregator.analysis._curator_where import (
        Condition,
        ConditionError,
        Value,
        parse_where,
        value_condition,
    )

_MODULES = {
    "_curator_ledger": ["Budget", "BudgetExceededError", "Ledger", "Spend", "default_ledger_path"],
    "_curator_noise": [
        "NoisyCount",
        "central_laplace_count",
        "clamp_bias",
        "continuous_half_width",
        "discrete_half_width",
        "discrete_laplace_pmf",
        "discrete_laplace_tail",
        "exact_epsilon",
        "noise_scale",
    ],
    "_curator_numeric": [
        "NoisyMean",
        "NoisySum",
        "SumSpec",
        "mean_interval",
        "noisy_mean",
        "noisy_sum",
    ],
    "_curator_queries": [
        "NEIGHBOURS",
        "count_sensitivity",
        "histogram_sensitivity",
        "noisy_count",
        "noisy_histogram",
        "parse_values",
    ],
    "_curator_release": ["Release", "ReleasedAnswer", "make_release", "read_release"],
    "_curator_table": ["CuratorError", "Table", "file_digest", "load_table", "parse_types"],
    "_curator_where": ["Condition", "ConditionError", "Value", "parse_where", "value_condition"],
}
_EXPORTS = {name: f"{__name__}.{module}" for module, names in _MODULES.items() for name in names}
__all__ = [
    "NEIGHBOURS",
    "Budget",
    "BudgetExceededError",
    "Condition",
    "ConditionError",
    "CuratorError",
    "Ledger",
    "NoisyCount",
    "NoisyMean",
    "NoisySum",
    "Release",
    "ReleasedAnswer",
    "Spend",
    "SumSpec",
    "Table",
    "Value",
    "central_laplace_count",
    "clamp_bias",
    "continuous_half_width",
    "count_sensitivity",
    "default_ledger_path",
    "discrete_half_width",
    "discrete_laplace_pmf",
    "discrete_laplace_tail",
    "exact_epsilon",
    "file_digest",
    "histogram_sensitivity",
    "load_table",
    "make_release",
    "mean_interval",
    "noise_scale",
    "noisy_count",
    "noisy_histogram",
    "noisy_mean",
    "noisy_sum",
    "parse_types",
    "parse_values",
    "parse_where",
    "read_release",
    "value_condition",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
