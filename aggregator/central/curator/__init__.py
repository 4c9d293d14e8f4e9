"""The trusted curator: central queries with Laplace noise on raw data the custodian holds.

The mechanisms are pure functions from exact bounded aggregates (at most K rows per privacy
unit) to noisy releases: count and histogram (``noisy_count``, ``noisy_histogram``), sum
and mean of a clipped column (``noisy_sum``, ``noisy_mean``, ``noisy_mean_public_n``), DP key
selection over an unknown domain (``select_keys``), accuracy previews (``preview_*``), and a
non-interactive release (``make_release``) that answers later counts at no privacy cost;
with the privacy budget ledger (``Ledger``). Names are imported on first use. See
docs/curator.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.aggregator.central.curator._base import (
        NEIGHBOURS,
        CuratorError,
        PrivacyUnit,
        Value,
        check_neighbours,
    )
    from deniable.aggregator.central.curator._ledger import (
        Budget,
        BudgetExceededError,
        Ledger,
        Spend,
        default_ledger_path,
    )
    from deniable.aggregator.central.curator._mean import (
        NoisyMean,
        NoisyPublicMean,
        mean_interval,
        midpoint_units,
        noisy_mean,
        noisy_mean_public_n,
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
        NoisySum,
        SumSpec,
        noisy_sum,
    )
    from deniable.aggregator.central.curator._preview import (
        Preview,
        preview_count,
        preview_histogram,
        preview_mean,
        preview_mean_public_n,
        preview_release,
        preview_selection,
        preview_sum,
    )
    from deniable.aggregator.central.curator._queries import (
        NoisyHistogram,
        noisy_count,
        noisy_histogram,
        parse_values,
    )
    from deniable.aggregator.central.curator._release import (
        Constraints,
        Release,
        ReleaseColumn,
        ReleasedAnswer,
        make_release,
        read_release,
    )
    from deniable.aggregator.central.curator._selection import (
        KeySelection,
        SelectedKey,
        SelectionPlan,
        select_keys,
        selection_plan,
        unique_release_bound,
    )
    from deniable.aggregator.central.curator._sensitivity import (
        count_sensitivity,
        histogram_sensitivity,
        privacy_fields,
        sum_sensitivity_units,
    )
    from deniable.aggregator.central.curator._table import (
        Table,
        file_digest,
        load_table,
        parse_types,
    )
    from deniable.aggregator.central.curator._where import (
        Condition,
        ConditionError,
        parse_where,
        value_condition,
    )

_MODULES = {
    "_base": [
        "NEIGHBOURS",
        "CuratorError",
        "PrivacyUnit",
        "Value",
        "check_neighbours",
    ],
    "_ledger": [
        "Budget",
        "BudgetExceededError",
        "Ledger",
        "Spend",
        "default_ledger_path",
    ],
    "_mean": [
        "NoisyMean",
        "NoisyPublicMean",
        "mean_interval",
        "midpoint_units",
        "noisy_mean",
        "noisy_mean_public_n",
    ],
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
        "NoisySum",
        "SumSpec",
        "noisy_sum",
    ],
    "_preview": [
        "Preview",
        "preview_count",
        "preview_histogram",
        "preview_mean",
        "preview_mean_public_n",
        "preview_release",
        "preview_selection",
        "preview_sum",
    ],
    "_queries": [
        "NoisyHistogram",
        "noisy_count",
        "noisy_histogram",
        "parse_values",
    ],
    "_release": [
        "Constraints",
        "Release",
        "ReleaseColumn",
        "ReleasedAnswer",
        "make_release",
        "read_release",
    ],
    "_selection": [
        "KeySelection",
        "SelectedKey",
        "SelectionPlan",
        "select_keys",
        "selection_plan",
        "unique_release_bound",
    ],
    "_sensitivity": [
        "count_sensitivity",
        "histogram_sensitivity",
        "privacy_fields",
        "sum_sensitivity_units",
    ],
    "_table": [
        "Table",
        "file_digest",
        "load_table",
        "parse_types",
    ],
    "_where": [
        "Condition",
        "ConditionError",
        "parse_where",
        "value_condition",
    ],
}
_EXPORTS = {name: f"{__name__}.{module}" for module, names in _MODULES.items() for name in names}
__all__ = [
    "NEIGHBOURS",
    "Budget",
    "BudgetExceededError",
    "Condition",
    "ConditionError",
    "Constraints",
    "CuratorError",
    "KeySelection",
    "Ledger",
    "NoisyCount",
    "NoisyHistogram",
    "NoisyMean",
    "NoisyPublicMean",
    "NoisySum",
    "Preview",
    "PrivacyUnit",
    "Release",
    "ReleaseColumn",
    "ReleasedAnswer",
    "SelectedKey",
    "SelectionPlan",
    "Spend",
    "SumSpec",
    "Table",
    "Value",
    "central_laplace_count",
    "check_neighbours",
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
    "midpoint_units",
    "noise_scale",
    "noisy_count",
    "noisy_histogram",
    "noisy_mean",
    "noisy_mean_public_n",
    "noisy_sum",
    "parse_types",
    "parse_values",
    "parse_where",
    "preview_count",
    "preview_histogram",
    "preview_mean",
    "preview_mean_public_n",
    "preview_release",
    "preview_selection",
    "preview_sum",
    "privacy_fields",
    "read_release",
    "select_keys",
    "selection_plan",
    "sum_sensitivity_units",
    "unique_release_bound",
    "value_condition",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
