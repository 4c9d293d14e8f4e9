"""Release steps, the default δ, the central (ε, δ) of stepped releases, and composition."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from deniable.shared.privacy._shuffling import shuffled_epsilon

__all__ = [
    "ASSUMES",
    "DEFAULT_DELTA",
    "HOLDS_AGAINST",
    "MAX_RELEASE_STEP",
    "METHOD",
    "CentralBound",
    "ReleaseSteps",
    "central_bound",
    "compose",
    "default_delta",
]

MAX_RELEASE_STEP = 10**9
DEFAULT_DELTA = 1e-6  # the default δ's ceiling, see default_delta
METHOD = (
    "amplification by shuffling, numerical upper bound of Feldman, McMillan and Talwar "
    "(2021), for a step of the reports"
)
ASSUMES = (
    "the other reports of each step come from distinct participants admitted with "
    "enrollment tokens, one token per person (the token issuer is trusted for that), each "
    "report randomized on its participant's own device"
)
HOLDS_AGAINST = (
    "anyone who sees only the released estimates; not the daemon's operator, who sees "
    "every randomized report: against the operator the local ε applies"
)


@dataclass(frozen=True)
class ReleaseSteps:
    """When a question's estimate is released, in steps of at least ``step`` reports.

    The first release is at ``first`` stored reports, each next one once at least ``step``
    more are stored than at the last release. A batch that crosses a release point
    releases the tally at its commit, so every step holds at least ``step`` reports (the
    first holds ``first``).
    """

    first: int
    step: int

    def __post_init__(self) -> None:
        if not 1 <= self.step <= MAX_RELEASE_STEP:
            raise ValueError(f"step: must be 1..{MAX_RELEASE_STEP:,}, got {self.step!r}")
        if self.first < 1:
            raise ValueError(f"first: must be >= 1, got {self.first!r}")

    @classmethod
    def of(cls, min_reports: int, release_step: int) -> ReleaseSteps | None:
        """A survey's steps, or None when ``release_step`` is 0 (not stepped).

        The first release is at the survey's release gate, or after one step without one.
        """
        if release_step == 0:
            return None
        return cls(first=min_reports or release_step, step=release_step)

    def next_at(self, released: int) -> int:
        """The stored count at which the next release is due, after one of ``released``."""
        return self.first if released == 0 else released + self.step

    def due(self, released: int, stored: int) -> bool:
        """Whether ``stored`` reports call for a new release after one of ``released``."""
        return stored >= self.next_at(released)

    @property
    def smallest(self) -> int:
        """The fewest reports any step holds: the central ε is computed for it."""
        return min(self.first, self.step)


@dataclass(frozen=True)
class CentralBound:
    """A central (ε, δ) against readers of released estimates, beside the local ε₀."""

    epsilon: float
    delta: float
    step: int
    local_epsilon: float
    questions: int = 1


def default_delta(stored: int) -> float:
    """The δ used when none is asked for: min(1e-6, 1 / (100·stored)), down to a power of 10.

    A δ is meaningful only well below 1/n for n people (a mechanism that publishes one
    random person's answer in full is (0, 1/n)-DP); a factor of 100 below it, and never
    above 1e-6, costs little: the bound grows about as √log(1/δ). Rounding down to a power
    of 10 keeps the figure steady while reports arrive (and its computation cached).
    """
    return min(DEFAULT_DELTA, 10.0 ** math.floor(math.log10(1.0 / (100.0 * max(stored, 1)))))


def central_bound(local_epsilon: float, steps: ReleaseSteps, delta: float) -> CentralBound:
    """The central (ε, δ) of every release of one question made in ``steps``.

    Each report lies in exactly one step (the reports stored between two consecutive
    releases), and the sequence of releases is a function of the per-step tallies, each
    a post-processing of that step's shuffled multiset (a tally is a sum, blind to order
    and arrival). Changing one participant's report changes one step only, so the
    sequence is as private as the one step holding it (parallel composition): the
    shuffling bound for that step, at least :attr:`ReleaseSteps.smallest` reports.
    """
    epsilon = shuffled_epsilon(local_epsilon, steps.smallest, delta)
    return CentralBound(epsilon, delta, steps.smallest, local_epsilon)


def compose(bounds: Sequence[CentralBound]) -> CentralBound:
    """Basic composition over a participant's questions: the ε, the δ and the ε₀ add up.

    Sound whatever the questions (each question's releases use its own reports, drawn
    with independent randomness), though not the tightest: advanced composition is
    smaller only for many questions.
    """
    if not bounds:
        raise ValueError("bounds: at least one question is needed")
    return CentralBound(
        epsilon=math.fsum(b.epsilon for b in bounds),
        delta=math.fsum(b.delta for b in bounds),
        step=min(b.step for b in bounds),
        local_epsilon=math.fsum(b.local_epsilon for b in bounds),
        questions=sum(b.questions for b in bounds),
    )
