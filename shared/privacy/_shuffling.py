"""Amplification by shuffling: the numerical bound of Feldman, McMillan and Talwar (2021)."""

from __future__ import annotations

import math
from functools import lru_cache

__all__ = ["MAX_SHUFFLED", "shuffled_delta", "shuffled_epsilon"]

# The bound is computed for at most this many reports: it only decreases with n (see
# shuffled_epsilon), so the figure for MAX_SHUFFLED holds for any larger n, and the
# computation stays a few thousand terms (a step of more reports is credited as 10^6).
MAX_SHUFFLED = 10**6
_ITERATIONS = 40  # bisection steps: the returned ε is within ε₀ / 2^40 above the least one
_TAIL = 1e-6  # the mass of C left out of the sum, as a fraction of δ (added back in full)


def _check(local_epsilon: float, n: int) -> None:
    if not (math.isfinite(local_epsilon) and local_epsilon > 0):
        raise ValueError(f"local_epsilon: must be a positive number, got {local_epsilon!r}")
    if type(n) is not int or n < 1:
        raise ValueError(f"n: must be a whole number >= 1, got {n!r}")


def _check_delta(delta: float) -> None:
    if not 0.0 < delta < 1.0:  # also refuses NaN
        raise ValueError(f"delta: must be in (0, 1), got {delta!r}")


class _Clones:
    """The two binomial mixtures P, Q the clones paper reduces n reports of ε₀ to.

    C ~ Bin(n − 1, e^(−ε₀)) is the number of other reports that are "clones" of the
    changed participant's report; each clone falls on either of the two candidate values
    with probability 1/2, A ~ Bin(C, 1/2). The participant's own report falls on the first
    value with probability α = e^ε₀ / (e^ε₀ + 1) under P and 1 − α under Q. Both coordinates
    are seen, so C is known and the divergence is the C-weighted sum of the divergences
    between P_c = α·(B_c + 1) + (1 − α)·B_c and Q_c = (1 − α)·(B_c + 1) + α·B_c, with
    B_c ~ Bin(c, 1/2).
    """

    def __init__(self, local_epsilon: float, n: int, tail: float) -> None:
        import numpy as np
        from scipy import stats  # imported here: scipy.stats adds ~0.8 s to every CLI start

        self.alpha = 1.0 / (1.0 + math.exp(-local_epsilon))
        trials, p = min(n, MAX_SHUFFLED) - 1, math.exp(-local_epsilon)
        low = int(stats.binom.ppf(tail, trials, p))
        high = int(stats.binom.isf(tail, trials, p))
        self.counts = np.arange(low, high + 1, dtype=np.float64)
        self.weights = stats.binom.pmf(self.counts, trials, p)
        # The divergence at each c is at most 1: the mass left out is added in full.
        self.left_out = float(stats.binom.cdf(low - 1, trials, p) + stats.binom.sf(high, trials, p))

    def divergence(self, epsilon: float) -> float:
        """An upper bound on the hockey-stick divergence D_{e^ε}(P ‖ Q) (= D(Q ‖ P)).

        For each c the likelihood ratio P_c(x) / Q_c(x) increases with x (x / (c + 1 − x)
        does), so the positive part of P_c − e^ε·Q_c is one upper tail x > β(c + 1), summed
        with two binomial tails.
        """
        import numpy as np
        from scipy import stats

        alpha, scale = self.alpha, math.exp(epsilon)
        below = alpha - scale * (1.0 - alpha)
        if below <= 0.0:  # e^ε >= e^ε₀, the largest likelihood ratio
            return 0.0
        ratio = (scale * alpha - (1.0 - alpha)) / below
        first = np.floor(ratio / (1.0 + ratio) * (self.counts + 1.0)) + 1.0
        shifted = stats.binom.sf(first - 2.0, self.counts, 0.5)  # P(B_c + 1 >= first)
        plain = stats.binom.sf(first - 1.0, self.counts, 0.5)  # P(B_c >= first)
        p_tail = alpha * shifted + (1.0 - alpha) * plain
        q_tail = (1.0 - alpha) * shifted + alpha * plain
        terms = np.clip(p_tail - scale * q_tail, 0.0, 1.0)
        return float(self.weights @ terms) + self.left_out


def shuffled_delta(local_epsilon: float, n: int, epsilon: float) -> float:
    """The δ at which n shuffled ε₀-DP reports are (ε, δ)-DP, by the clones bound.

    An upper bound on the hockey-stick divergence between the two binomial mixtures of
    Feldman, McMillan and Talwar (2021): exact up to rounding, plus the binomial mass (at
    most 2e-15) the sum leaves out. 0 when ``epsilon >= local_epsilon``.
    """
    _check(local_epsilon, n)
    if not epsilon >= 0.0:
        raise ValueError(f"epsilon: must be >= 0, got {epsilon!r}")
    return _Clones(local_epsilon, n, 1e-15).divergence(epsilon)


def shuffled_epsilon(local_epsilon: float, n: int, delta: float) -> float:
    """The central ε of n shuffled reports, each from an ε₀-DP local randomizer, at δ.

    Feldman, McMillan and Talwar, "Hiding Among the Clones: A Simple and Nearly Optimal
    Analysis of Privacy Amplification by Shuffling", FOCS 2021: the shuffled multiset of n
    reports is (ε, δ)-DP whenever their two binomial mixtures P and Q (see
    :class:`_Clones`) are (ε, δ)-indistinguishable. This is the smallest such ε, found by
    bisection on [0, ε₀] and rounded up (never below the least one), so never more than
    ``local_epsilon``, which holds centrally too. It holds for any ε₀-DP randomizers,
    whatever the other n − 1 participants' data, and whatever is computed from the
    multiset afterwards.

    The bound decreases as n grows: the pair for n is the pair for n − 1 with one more
    report added at random, a post-processing of it. So the figure for a step of m reports
    holds for every step of at least m, and n above :data:`MAX_SHUFFLED` is computed at
    :data:`MAX_SHUFFLED`.
    """
    _check(local_epsilon, n)
    _check_delta(delta)
    return _shuffled_epsilon(float(local_epsilon), min(n, MAX_SHUFFLED), float(delta))


@lru_cache(maxsize=1024)
def _shuffled_epsilon(local_epsilon: float, n: int, delta: float) -> float:
    clones = _Clones(local_epsilon, n, delta * _TAIL)
    low, high = 0.0, local_epsilon  # divergence(high) = 0 <= delta
    for _ in range(_ITERATIONS):
        middle = (low + high) / 2.0
        if clones.divergence(middle) <= delta:
            high = middle
        else:
            low = middle
    return high
