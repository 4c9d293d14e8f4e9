"""Code shared by participants and aggregators: mechanism specifications and privacy math."""

from shared._exact import exp_at_least, tightest_epsilon
from shared._rr import ESTIMANDS, Estimand, RandomizedResponseSpec, check_estimand

__all__ = [
    "ESTIMANDS",
    "Estimand",
    "RandomizedResponseSpec",
    "check_estimand",
    "exp_at_least",
    "tightest_epsilon",
]
