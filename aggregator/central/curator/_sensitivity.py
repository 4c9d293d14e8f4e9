"""Sensitivities under a privacy unit of at most K rows, and the unit's fields in every output.

Neighbouring data sets differ in all rows of one privacy unit; the engine keeps at most K
rows of each unit per query, so one unit moves an aggregate by at most:

=============================  ======================  ==================================
query                          add-remove (one unit)   replace (one unit changed)
=============================  ======================  ==================================
count                          K                       K (0..K rows of it match, either
                                                       way)
histogram / contingency (L1)   K (K rows, one bin      2K (K rows leave their bins, K
                               each)                   arrive in others)
sum, in grid steps of h        K·max(|lo|, |hi|)       K·(max(hi, 0) − min(lo, 0))
mean (noisy sum / count)       sum's Δ and count Δ=K   same
mean, public N (rows only)     (not available)         hi − lo, over N (Dwork–Roth)
key selection (L1 of keys)     K                       2K
=============================  ======================  ==================================

The sum's bound is the *per-unit clamp*: a unit's total is at most K rows each clipped to
[lo, hi], so it lies in [K·min(lo, 0), K·max(hi, 0)] (0 when none of its rows matches).
"""

from __future__ import annotations

from typing import Any

from deniable.aggregator.central.curator._base import PrivacyUnit, check_neighbours

__all__ = [
    "count_sensitivity",
    "histogram_sensitivity",
    "privacy_fields",
    "sum_sensitivity_units",
]


def count_sensitivity(neighbours: str, unit: PrivacyUnit) -> int:
    """K under either relation: one unit's at most K rows start or stop counting."""
    check_neighbours(neighbours)
    return unit.max_contributions


def histogram_sensitivity(neighbours: str, unit: PrivacyUnit) -> int:
    """L1 sensitivity of counts per key: K under add-remove, 2K under replace."""
    factor = 1 if check_neighbours(neighbours) == "add-remove" else 2
    return factor * unit.max_contributions


def sum_sensitivity_units(low: int, high: int, neighbours: str, unit: PrivacyUnit) -> int:
    """Δ in grid steps of a sum of values in [low, high] steps, at most K of them per unit.

    Add-remove: K·max(|low|, |high|). Replace: K·(max(high, 0) − min(low, 0)), since a unit
    may go from contributing nothing (no matching row, or empty cells) to K·high. At least
    1 (a range [0, 0] still needs noise of a positive scale).
    """
    k = unit.max_contributions
    if check_neighbours(neighbours) == "add-remove":
        return max(k * max(abs(low), abs(high)), 1)
    return max(k * (max(high, 0) - min(low, 0)), 1)


def privacy_fields(neighbours: str, unit: PrivacyUnit) -> dict[str, Any]:
    """The neighbour relation and the privacy unit (its column and K), as every output states."""
    return {
        "neighbours": neighbours,
        "privacy_unit": {
            "column": unit.column,
            "max_contributions": unit.max_contributions,
            "description": unit.describe(),
        },
    }
