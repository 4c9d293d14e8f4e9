"""Central privacy of released estimates: amplification by shuffling, release steps, composition.

scipy is imported inside the functions that compute the bound, so that importing this
package stays light.
"""

from __future__ import annotations

from deniable.shared.privacy._central import (
    ASSUMES,
    DEFAULT_DELTA,
    HOLDS_AGAINST,
    MAX_RELEASE_STEP,
    METHOD,
    CentralBound,
    ReleaseSteps,
    central_bound,
    compose,
    default_delta,
)
from deniable.shared.privacy._shuffling import MAX_SHUFFLED, shuffled_delta, shuffled_epsilon

__all__ = [
    "ASSUMES",
    "DEFAULT_DELTA",
    "HOLDS_AGAINST",
    "MAX_RELEASE_STEP",
    "MAX_SHUFFLED",
    "METHOD",
    "CentralBound",
    "ReleaseSteps",
    "central_bound",
    "compose",
    "default_delta",
    "shuffled_delta",
    "shuffled_epsilon",
]
