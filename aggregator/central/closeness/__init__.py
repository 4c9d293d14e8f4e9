"""The closeness audit of a generalized table: ε-closeness and (n, ε)-closeness.

Rows equal in every quasi-identifier form a class; each class's distribution of the
sensitive column is measured against the whole table's (``closeness``: variational and L1
exact, L2 exact through its square, KL in bits), and ``n_closeness`` decides whether a
reference set of at least n rows exists that every class is within ε of. Names are
imported on first use. See docs/closeness.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.aggregator.central.closeness._audit import (
        DISTANCES,
        ClassDistance,
        ClosenessReport,
        Measure,
        Table,
        check_epsilon,
        closeness,
        kl_bits,
        l2_squared,
        measure,
        parse_epsilon,
        read_table,
        variational,
    )
    from deniable.aggregator.central.closeness._search import METHODS, NCloseness, n_closeness

_MODULES = {
    "_audit": [
        "DISTANCES",
        "ClassDistance",
        "ClosenessReport",
        "Measure",
        "Table",
        "check_epsilon",
        "closeness",
        "kl_bits",
        "l2_squared",
        "measure",
        "parse_epsilon",
        "read_table",
        "variational",
    ],
    "_search": ["METHODS", "NCloseness", "n_closeness"],
}
_EXPORTS = {name: f"{__name__}.{module}" for module, names in _MODULES.items() for name in names}
__all__ = [
    "DISTANCES",
    "METHODS",
    "ClassDistance",
    "ClosenessReport",
    "Measure",
    "NCloseness",
    "Table",
    "check_epsilon",
    "closeness",
    "kl_bits",
    "l2_squared",
    "measure",
    "n_closeness",
    "parse_epsilon",
    "read_table",
    "variational",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
