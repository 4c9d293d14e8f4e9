"""Sample-size planning: participants for a margin, or the margin for n, per mechanism."""

from __future__ import annotations

from deniable.aggregator.analysis.planning._binary import (
    Plan,
    margin_achieved,
    participants_needed,
    plan,
)
from deniable.aggregator.analysis.planning._compared import KindPlan, plan_question
from deniable.aggregator.analysis.planning._joint import AssociationPlan, plan_associations
from deniable.aggregator.analysis.planning._sample_size import margin_for, smallest_n

__all__ = [
    "AssociationPlan",
    "KindPlan",
    "Plan",
    "margin_achieved",
    "margin_for",
    "participants_needed",
    "plan",
    "plan_associations",
    "plan_question",
    "smallest_n",
]
