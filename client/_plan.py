"""What one answer sends and costs: the plan, checked against the device's budgets."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from deniable.client._answer import PreparedReport
from deniable.client._errors import RefusedError
from deniable.client._policy import Policy, round_down, round_up

__all__ = ["Plan"]


@dataclass(frozen=True)
class Plan:
    """The reports one answer sends: kept ones as they were drawn, fresh ones drawn now.

    ``device_before`` is the ε spent on this device before (every aggregator, each draw
    once), ``aggregator_before`` the ε spent at this aggregator, and ``aggregator_draws``
    the draws it has been charged for.
    """

    aggregator: str
    survey_id: str
    prepared: tuple[PreparedReport, ...]
    device_before: float = 0.0
    aggregator_before: float = 0.0
    aggregator_draws: frozenset[str] = frozenset()

    @property
    def cost(self) -> float:
        """The ε this answer adds to the device's total (draws charged before cost nothing)."""
        return _once({item.drawn: item.cost for item in self.prepared if item.cost})

    @property
    def aggregator_cost(self) -> float:
        """The ε this answer adds at this aggregator (a draw it was charged for: nothing)."""
        return _once(
            {
                item.drawn: item.mechanism.epsilon
                for item in self.prepared
                if item.drawn not in self.aggregator_draws
            }
        )

    @property
    def sent(self) -> bool:
        """Whether the aggregator acknowledged every report of the survey before."""
        return all(item.sent_at is not None for item in self.prepared)

    @property
    def spent_before(self) -> float:
        """ε spent on this device before this answer."""
        return self.device_before

    @property
    def spent_after(self) -> float:
        """ε spent on this device once this answer is charged, summed exactly."""
        return math.fsum([self.device_before, self.cost])

    @property
    def aggregator_after(self) -> float:
        """ε spent at this aggregator once this answer is charged, summed exactly."""
        return math.fsum([self.aggregator_before, self.aggregator_cost])

    def check_budget(self, policy: Policy) -> None:
        """Refuse, before anything is sent, an answer that would take a total over budget.

        The device-wide total must stay within ``policy.budget``, and the total at this
        aggregator within ``policy.budget_per_aggregator`` when one is set.

        Raises:
            RefusedError: the message says by how much, and how to raise the budget.
        """
        if self.cost > 0 and self.spent_after > policy.budget:
            left = policy.budget - self.spent_before
            raise RefusedError(
                f"answering would spend epsilon {round_up(self.cost)}, but only "
                f"{round_down(left)} of your budget of {policy.budget!r} "
                f"({policy.source('budget')}) is left on this device, over every aggregator "
                f"({round_up(self.spent_before)} spent): "
                f"{round_up(self.spent_after - policy.budget)} over budget; refusing to answer, "
                f"nothing was sent. See 'deniable budget'; to accept more privacy loss, raise "
                f"the budget with {policy.how_to_change('budget')}"
            )
        cap = policy.budget_per_aggregator
        if cap is not None and self.aggregator_cost > 0 and self.aggregator_after > cap:
            left = cap - self.aggregator_before
            raise RefusedError(
                f"answering would spend epsilon {round_up(self.aggregator_cost)} at "
                f"{self.aggregator}, but only {round_down(left)} of your budget of {cap!r} per "
                f"aggregator ({policy.source('budget_per_aggregator')}) is left there "
                f"({round_up(self.aggregator_before)} spent): "
                f"{round_up(self.aggregator_after - cap)} over budget; refusing to answer, "
                f"nothing was sent. See 'deniable budget'; to accept more privacy loss, raise "
                f"it with {policy.how_to_change('budget_per_aggregator')}"
            )


def _once(by_draw: Mapping[str, float]) -> float:
    return math.fsum(by_draw.values())
