"""The trusted curator: central queries with Laplace noise on raw data the custodian holds.

The mechanisms are pure functions from exact bounded aggregates (at most K rows per privacy
unit) to noisy releases: count and histogram (``noisy_count``, ``noisy_histogram``), sum
and mean of a clipped column (``noisy_sum``, ``noisy_mean``, ``noisy_mean_public_n``), DP key
selection over an unknown domain (``select_keys``), accuracy previews (``preview_*``), and a
non-interactive release (``make_release``) that answers later counts at no privacy cost;
the custodian's service over a query engine and a budget ledger (``CuratorService``,
``engine``, ``ledger``). Names are imported on first use. See
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
        release_from_document,
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
    from deniable.aggregator.central.curator.engine import ConditionError
    from deniable.aggregator.central.curator.ledger import BudgetExceededError
    from deniable.aggregator.central.curator.service import (
        CUSTODIAN,
        CuratorService,
        Dataset,
        ReleaseNotFoundError,
        answer_from_release,
        check_totals,
        query_from_wire,
        register_dataset,
        release_from_wire,
    )

_MODULES = {
    "_base": [
        "NEIGHBOURS",
        "CuratorError",
        "PrivacyUnit",
        "Value",
        "check_neighbours",
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
        "release_from_document",
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
    "engine": ["ConditionError"],
    "ledger": ["BudgetExceededError"],
    "service": [
        "CUSTODIAN",
        "CuratorService",
        "Dataset",
        "ReleaseNotFoundError",
        "answer_from_release",
        "check_totals",
        "query_from_wire",
        "register_dataset",
        "release_from_wire",
    ],
}
_EXPORTS = {name: f"{__name__}.{module}" for module, names in _MODULES.items() for name in names}
__all__ = [
    "CUSTODIAN",
    "NEIGHBOURS",
    "BudgetExceededError",
    "ConditionError",
    "Constraints",
    "CuratorError",
    "CuratorService",
    "Dataset",
    "KeySelection",
    "NoisyCount",
    "NoisyHistogram",
    "NoisyMean",
    "NoisyPublicMean",
    "NoisySum",
    "Preview",
    "PrivacyUnit",
    "Release",
    "ReleaseColumn",
    "ReleaseNotFoundError",
    "ReleasedAnswer",
    "SelectedKey",
    "SelectionPlan",
    "SumSpec",
    "Value",
    "answer_from_release",
    "central_laplace_count",
    "check_neighbours",
    "check_totals",
    "clamp_bias",
    "continuous_half_width",
    "count_sensitivity",
    "discrete_half_width",
    "discrete_laplace_pmf",
    "discrete_laplace_tail",
    "exact_epsilon",
    "histogram_sensitivity",
    "make_release",
    "mean_interval",
    "midpoint_units",
    "noise_scale",
    "noisy_count",
    "noisy_histogram",
    "noisy_mean",
    "noisy_mean_public_n",
    "noisy_sum",
    "parse_values",
    "preview_count",
    "preview_histogram",
    "preview_mean",
    "preview_mean_public_n",
    "preview_release",
    "preview_selection",
    "preview_sum",
    "privacy_fields",
    "query_from_wire",
    "read_release",
    "register_dataset",
    "release_from_document",
    "release_from_wire",
    "select_keys",
    "selection_plan",
    "sum_sensitivity_units",
    "unique_release_bound",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
