"""Code shared by participants and aggregators: mechanism specifications and privacy math."""

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._rr import ESTIMANDS, Estimand, RandomizedResponseSpec, check_estimand

__all__ = [
    "ESTIMANDS",
    "Estimand",
    "RandomizedResponseSpec",
    "check_estimand",
    "exp_at_least",
    "tightest_epsilon",
]
