"""Empirical privacy audit: certify a lower bound on a mechanism's ε from samples.

A mechanism M is ε-LDP when P(M(x) ∈ S) <= e^ε · P(M(x') ∈ S) for every pair of inputs
x, x' and every event S. Fix x, x' and S in advance, run M N times on each input and count
the reports in S: k1 of n1 for x, k2 of n2 for x'. One-sided Clopper–Pearson bounds give,
with probability at least ``confidence`` each,

    p1 = P(M(x) ∈ S) >= lower(k1, n1)   and   p2 = P(M(x') ∈ S) <= upper(k2, n2),

so with probability at least 1 − 2(1 − confidence) the true ε is at least

    certified = ln(lower(k1, n1) / upper(k2, n2)).

A certified bound above the ε the mechanism claims proves (at that confidence) that the
claim is false. The harness treats the mechanism as a black box: a sampler that maps an
array of true inputs and a seeded ``numpy.random.Generator`` to reports, and an event that
maps reports to booleans. Tests choose the neighbouring inputs and the event that maximize
the ratio; a badly chosen event only makes the audit weaker, never wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy import stats

__all__ = [
    "DEFAULT_CONFIDENCE",
    "Audit",
    "Event",
    "Sampler",
    "certified_epsilon",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "count_hits",
    "epsilon_upper_bound",
    "run_audit",
]

DEFAULT_CONFIDENCE = 1.0 - 1e-6
"""Confidence of each one-sided bound: a correct mechanism is flagged with probability
at most 2·10⁻⁶, so a fixed-seed test never fails by chance on a correct mechanism."""

_R = TypeVar("_R")

Sampler = Callable[[NDArray[Any], np.random.Generator], _R]
"""Reports for an array of true inputs, drawn with an injected seeded generator."""

Event = Callable[[_R], NDArray[np.bool_]]
"""Whether each report lies in the audited event S (one boolean per report)."""


def _check_counts(k: int, n: int) -> None:
    if not (isinstance(n, int) and n >= 1 and isinstance(k, int) and 0 <= k <= n):
        raise ValueError(f"need integers 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}")


def _check_confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return confidence


def clopper_pearson_lower(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided Clopper–Pearson lower bound on p from k successes in n trials.

    The largest p0 with P(Bin(n, p0) >= k) <= 1 − confidence, i.e. the (1 − confidence)
    quantile of Beta(k, n − k + 1); 0 when k = 0.

    Example:
        >>> round(clopper_pearson_lower(10, 10, 0.99), 6)  # 0.01 ** (1/10)
        0.630957
    """
    _check_counts(k, n)
    if k == 0:
        return 0.0
    return float(stats.beta.ppf(1.0 - _check_confidence(confidence), k, n - k + 1))


def clopper_pearson_upper(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided Clopper–Pearson upper bound on p from k successes in n trials.

    The smallest p0 with P(Bin(n, p0) <= k) <= 1 − confidence, i.e. the ``confidence``
    quantile of Beta(k + 1, n − k); 1 when k = n.

    Example:
        >>> round(clopper_pearson_upper(0, 10, 0.99), 6)  # 1 − 0.01 ** (1/10)
        0.369043
    """
    _check_counts(k, n)
    if k == n:
        return 1.0
    return float(stats.beta.ppf(_check_confidence(confidence), k + 1, n - k))


def certified_epsilon(
    k1: int, n1: int, k2: int, n2: int, confidence: float = DEFAULT_CONFIDENCE
) -> float:
    """Lower confidence bound on ln(p1/p2): ln(lower(k1, n1) / upper(k2, n2)).

    p1 is the event's probability under the input it favours (k1 hits in n1 runs), p2 under
    the neighbouring input (k2 hits in n2 runs). Holds with probability at least
    1 − 2(1 − confidence); −inf when k1 = 0 (nothing certified).

    Example:
        >>> round(certified_epsilon(750_000, 10**6, 250_000, 10**6), 4)  # ln 3 = 1.0986
        1.0876
    """
    low = clopper_pearson_lower(k1, n1, confidence)
    high = clopper_pearson_upper(k2, n2, confidence)
    return math.log(low / high) if low > 0 else -math.inf


def epsilon_upper_bound(
    k1: int, n1: int, k2: int, n2: int, confidence: float = DEFAULT_CONFIDENCE
) -> float:
    """Upper confidence bound on ln(p1/p2): ln(upper(k1, n1) / lower(k2, n2)).

    If the claimed ε is the event's exact log-ratio, it lies below this bound with
    probability at least 1 − 2(1 − confidence); a claim above it is looser than the
    mechanism (more noise than the stated ε needs). +inf when k2 = 0.
    """
    high = clopper_pearson_upper(k1, n1, confidence)
    low = clopper_pearson_lower(k2, n2, confidence)
    return math.log(high / low) if low > 0 else math.inf


@dataclass(frozen=True)
class Audit:
    """The outcome of one audit: hit counts of the event under both inputs, and the bounds.

    Attributes:
        label: what was audited (mechanism, parameters, event).
        claimed: the ε the mechanism claims.
        n: runs per input.
        hits: (k1, k2): reports in the event for the favoured input x and for x'.
        confidence: confidence of each one-sided Clopper–Pearson bound.
    """

    label: str
    claimed: float
    n: int
    hits: tuple[int, int]
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def certified(self) -> float:
        """Certified lower bound on the mechanism's true ε."""
        k1, k2 = self.hits
        return certified_epsilon(k1, self.n, k2, self.n, self.confidence)

    @property
    def upper(self) -> float:
        """Upper confidence bound on the event's log-ratio."""
        k1, k2 = self.hits
        return epsilon_upper_bound(k1, self.n, k2, self.n, self.confidence)

    @property
    def estimate(self) -> float:
        """The point estimate ln(k1/k2) of the event's log-ratio (equal n for both)."""
        k1, k2 = self.hits
        if k1 == 0:
            return -math.inf
        return math.log(k1 / k2) if k2 > 0 else math.inf

    def flags(self, claimed: float | None = None) -> bool:
        """Whether the certified bound exceeds ``claimed`` (default: the mechanism's claim)."""
        return self.certified > (self.claimed if claimed is None else claimed)

    def summary(self) -> str:
        """One line for assertion messages: the certified bound against the claimed ε."""
        k1, k2 = self.hits
        return (
            f"{self.label}: certified ε >= {self.certified:.4f} vs claimed ε = "
            f"{self.claimed:.4f} (estimate {self.estimate:.4f}, upper {self.upper:.4f}; "
            f"hits {k1} vs {k2} of N = {self.n} each, one-sided level "
            f"{1 - self.confidence:.0e} per side)"
        )


def count_hits(
    sample: Sampler[_R],
    event: Event[_R],
    x: Any,
    n: int,
    rng: np.random.Generator,
    batch: int = 1 << 18,
) -> int:
    """Run ``sample`` on n copies of input ``x`` (in batches) and count reports in ``event``."""
    hits = 0
    done = 0
    while done < n:
        size = min(batch, n - done)
        reports = sample(np.full(size, x), rng)
        inside = np.asarray(event(reports), dtype=bool)
        if inside.shape != (size,):
            raise ValueError(f"event must give one boolean per report, got shape {inside.shape}")
        hits += int(inside.sum())
        done += size
    return hits


def run_audit(
    label: str,
    sample: Sampler[_R],
    event: Event[_R],
    inputs: tuple[Any, Any],
    n: int,
    claimed: float,
    seed: int,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Audit:
    """Audit a mechanism on neighbouring inputs (x, x'), the event favouring x.

    Both inputs are run n times with one ``numpy.random.Generator`` seeded by ``seed``
    (x first), so the audit is deterministic.
    """
    rng = np.random.default_rng(seed)
    x, x_prime = inputs
    k1 = count_hits(sample, event, x, n, rng)
    k2 = count_hits(sample, event, x_prime, n, rng)
    return Audit(label, claimed, n, (k1, k2), confidence)
