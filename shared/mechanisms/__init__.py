"""Local mechanisms: one module each, one interface, one registry.

Every mechanism implements :class:`Mechanism`: validated parameters, its exact privacy map
(ε, δ = 0), vectorized CSPRNG perturbation, the wire encoding of its reports, a mergeable
integer tally, the estimator with its interval, planning and a plain-language
explanation. Importing this package registers the built-in mechanisms; an extension
registers its own with :func:`register` and travels on the wire as a
``RegisteredMechanism``.

The estimators take small protocols of the rates they need (:class:`BinaryRates`,
:class:`SupportRates`, :class:`ItemRates`, :class:`MeanReports`), not mechanism classes:
a mechanism with those rates reuses an estimator as it is (docs/mechanisms.md, "Layers").
"""

from __future__ import annotations

from deniable.shared.mechanisms._base import (
    Estimate,
    Mechanism,
    ReportValueError,
    Tally,
    add_sums,
)
from deniable.shared.mechanisms._frequency_estimate import (
    FrequencyEstimate,
    RateInterval,
    estimate_frequencies,
    frequency_arrays,
    frequency_coverage,
)
from deniable.shared.mechanisms._frequency_oracle import FrequencyOracle
from deniable.shared.mechanisms._mean import MeanEstimate, MeanTally, estimate_mean
from deniable.shared.mechanisms._numeric import NumericMechanism
from deniable.shared.mechanisms._parameters import MAX_OPTIONS
from deniable.shared.mechanisms._proportion import (
    ProportionEstimate,
    estimate_proportion,
    keep_probability,
    proportion_arrays,
)
from deniable.shared.mechanisms._rates import BinaryRates, ItemRates, MeanReports, SupportRates
from deniable.shared.mechanisms._registry import (
    mechanism_class,
    mechanism_name,
    mechanisms_for,
    register,
    registered,
    unregister,
)
from deniable.shared.mechanisms._wire import (
    InvalidMechanismError,
    describe_mechanism,
    mechanism_of,
)
from deniable.shared.mechanisms.duchi import DuchiMechanism
from deniable.shared.mechanisms.grr import GeneralizedRandomizedResponse
from deniable.shared.mechanisms.hybrid import HYBRID_THRESHOLD, HybridMechanism
from deniable.shared.mechanisms.item_rr import MAX_ITEMS, ItemRandomizedResponse
from deniable.shared.mechanisms.laplace import LaplaceMechanism
from deniable.shared.mechanisms.olh import OlhReport, OlhReports, OptimizedLocalHashing
from deniable.shared.mechanisms.oue import OptimizedUnaryEncoding
from deniable.shared.mechanisms.piecewise import PiecewiseMechanism
from deniable.shared.mechanisms.randomized_response import RandomizedResponse

BUILT_IN: tuple[type[Mechanism], ...] = (
    RandomizedResponse,
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
    OptimizedLocalHashing,
    LaplaceMechanism,
    DuchiMechanism,
    PiecewiseMechanism,
    HybridMechanism,
    ItemRandomizedResponse,
)
"""The built-in mechanisms, registered in this order (plans list each type's in it)."""

for _mechanism in BUILT_IN:
    register(_mechanism)

__all__ = [
    "BUILT_IN",
    "HYBRID_THRESHOLD",
    "MAX_ITEMS",
    "MAX_OPTIONS",
    "BinaryRates",
    "DuchiMechanism",
    "Estimate",
    "FrequencyEstimate",
    "FrequencyOracle",
    "GeneralizedRandomizedResponse",
    "HybridMechanism",
    "InvalidMechanismError",
    "ItemRandomizedResponse",
    "ItemRates",
    "LaplaceMechanism",
    "MeanEstimate",
    "MeanReports",
    "MeanTally",
    "Mechanism",
    "NumericMechanism",
    "OlhReport",
    "OlhReports",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "PiecewiseMechanism",
    "ProportionEstimate",
    "RandomizedResponse",
    "RateInterval",
    "ReportValueError",
    "SupportRates",
    "Tally",
    "add_sums",
    "describe_mechanism",
    "estimate_frequencies",
    "estimate_mean",
    "estimate_proportion",
    "frequency_arrays",
    "frequency_coverage",
    "keep_probability",
    "mechanism_class",
    "mechanism_name",
    "mechanism_of",
    "mechanisms_for",
    "proportion_arrays",
    "register",
    "registered",
    "unregister",
]
