"""Participants a joint question needs for a margin on the correlation of two of its parts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from deniable.aggregator.analysis.planning._sample_size import Variance, margin_for, smallest_n
from deniable.aggregator.analysis.simulation import check_shares
from deniable.shared.mechanisms import FrequencyOracle
from deniable.shared.questions import JOINT
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["AssociationPlan", "plan_associations"]


@dataclass(frozen=True)
class AssociationPlan:
    """The plan for one pair of scored parts at assumed cell shares.

    Attributes:
        part_a, part_b: the parts (yes/no scored 0/1, numeric parts at their bin midpoints).
        correlation, covariance: their values at the assumed cells.
        correlation_variance_one, covariance_variance_one: n times the delta-method
            variance of the estimate from n participants (the same formulas ``estimate``
            uses for its intervals), so the standard error is √(Var1/n).
        participants: n, given or the least n whose normal half-width is at most the margin.
        correlation_margin, covariance_margin: the half-widths at that n.
    """

    part_a: str
    part_b: str
    correlation: float
    covariance: float
    correlation_variance_one: float
    covariance_variance_one: float
    participants: int
    correlation_margin: float
    covariance_margin: float

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` fields."""
        return asdict(self)


def _per_participant(variance_one: float) -> Variance:
    """The variance from n participants, Var1/n (every cell covariance scales as 1/n)."""
    return lambda n: variance_one / n


def plan_associations(
    question: pb.Question,
    oracle: FrequencyOracle,
    cells: tuple[float, ...],
    *,
    margin: float | None = None,
    participants: int | None = None,
    confidence: float = 0.95,
) -> list[AssociationPlan]:
    """For each two yes/no or numeric parts: participants for ±``margin`` on their correlation.

    The cell shares are assumed (the first part slowest), as the variance of an estimated
    correlation depends on them. The estimate's own delta-method standard error is
    computed at n = 1 (every covariance of the cell estimates scales as 1/n), giving Var1;
    then n = z²·Var1/margin² as for every other plan, or the margin at ``participants``.
    """
    if (margin is None) == (participants is None):
        raise ValueError("give exactly one of margin or participants")
    shares = check_shares(cells, oracle.k)
    one = pb.Estimate(n=1, confidence=confidence)
    for share in shares:
        one.options.append(pb.OptionEstimate(estimate=share, estimate_raw=share))
    JOINT.complete_estimate(question, oracle, one)
    plans = []
    for pair in one.associations:
        rho_one, cov_one = pair.correlation_std_error**2, pair.covariance_std_error**2
        rho_variance, cov_variance = _per_participant(rho_one), _per_participant(cov_one)
        if margin is None:
            assert participants is not None  # exactly one of the two, checked above
            n = participants
        else:
            n = smallest_n(margin, confidence, rho_variance)
        plans.append(
            AssociationPlan(
                part_a=pair.part_a,
                part_b=pair.part_b,
                correlation=pair.correlation,
                covariance=pair.covariance,
                correlation_variance_one=rho_one,
                covariance_variance_one=cov_one,
                participants=n,
                correlation_margin=margin_for(n, confidence, rho_variance),
                covariance_margin=margin_for(n, confidence, cov_variance),
            )
        )
    return plans
