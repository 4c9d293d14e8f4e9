"""The trusted curator: central queries with Laplace noise on raw data the custodian holds.

Count and histogram (``noisy_count``, ``noisy_histogram``), sum and mean of a clipped column
(``noisy_sum``, ``noisy_mean``), the CSV table and its ``--where`` conditions, the privacy
budget ledger (``Ledger``), and a non-interactive release (``make_release``) that answers
later counts at no privacy cost. Names are imported on first use. See docs/curator.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.aggregator.central.curator._ledger import (
        Budget,
        BudgetExceededError,
        Ledger,
        Spend,
        default_ledger_path,
    )
    from deniable.aggregator.central.curator._noise import (
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
    from deniable.aggregator.central.curator._numeric import (
        NoisyMean,
        NoisySum,
        SumSpec,
        mean_interval,
        noisy_mean,
        noisy_sum,
    )
    from deniable.aggregator.central.curator._queries import (
        NEIGHBOURS,
        count_sensitivity,
        histogram_sensitivity,
        noisy_count,
        noisy_histogram,
        parse_values,
    )
    from deniable.aggregator.central.curator._release import (
        Release,
        ReleasedAnswer,
        make_release,
        read_release,
    )
    from deniable.aggregator.central.curator._table import (
        CuratorError,
        Table,
        file_digest,
        load_table,
        parse_types,
    )
    from deniable.aggregator.central.curator._where import (
        Condition,
        ConditionError,
        Value,
        parse_where,
        value_condition,
    )

_MODULES = {
    "_ledger": ["Budget", "BudgetExceededError", "Ledger", "Spend", "default_ledger_path"],
    "_noise": [
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
    "_numeric": [
        "NoisyMean",
        "NoisySum",
        "SumSpec",
        "mean_interval",
        "noisy_mean",
        "noisy_sum",
    ],
    "_queries": [
        "NEIGHBOURS",
        "count_sensitivity",
        "histogram_sensitivity",
        "noisy_count",
        "noisy_histogram",
        "parse_values",
    ],
    "_release": ["Release", "ReleasedAnswer", "make_release", "read_release"],
    "_table": ["CuratorError", "Table", "file_digest", "load_table", "parse_types"],
    "_where": ["Condition", "ConditionError", "Value", "parse_where", "value_condition"],
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
