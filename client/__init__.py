"""Participant side of deniable: answers are randomized here, before anything is sent."""

from deniable.client._rr import RandomizedResponse

__all__ = ["RandomizedResponse"]
