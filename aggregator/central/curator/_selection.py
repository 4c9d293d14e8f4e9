"""DP key selection over an unknown domain: present keys' noisy counts kept at or above τ.

Korolova, Kenthapadi, Mishra and Ntoulas (2009), "Releasing search queries and clicks
privately"; Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo and Gipson (2020),
"Differentially private SQL with bounded user contribution". Each key present in the data
gets discrete Laplace noise of scale Δ1/ε (Δ1 = K add-remove, 2K replace) and is released
iff its noisy count is >= τ. Keys held by other units too are protected by ε (the L1 change
of their counts is at most Δ1). A key held only by the differing unit has a count c >= 1,
and that unit's such keys have Σ c <= K; P(c + Z >= τ) = q^(τ−c)/(1+q) for τ >= c,
q = e^(−ε/Δ1). By the union bound and convexity of c ↦ q^(τ−c) (a maximum over the
polytope c_i >= 1, Σ c_i <= K sits at a vertex: one key K − m + 1, m − 1 keys 1),

    δ(τ) = max_{m=1..K} [q^(τ−K+m−1) + (m−1)·q^(τ−1)]/(1+q) = max(q^(τ−K), K·q^(τ−1))/(1+q)

(the bracket is convex in m, so the ends win). Where that unit's keys are absent (the other
direction), conditioning on none of them being released costs a factor 1/(1 − p_m), p_m <=
δ(τ) the release probability with m unique rows, against the e^(εm/Δ1) the common keys save:
the additive term is at most e^ε·(δ(τ) − (1 − q))⁺, zero unless δ(τ) > 1 − q (about ε/Δ1).
The δ stated is max of the two, computed as a certified upper bound (interval arithmetic on
e^(−x), rounded outwards), and τ is the least integer whose bound is <= the δ requested.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import islice
from typing import Any

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, Value
from deniable.aggregator.central.curator._noise import (
    INTERVAL_METHOD,
    check_confidence,
    check_curator_epsilon,
    discrete_half_width,
    exact_epsilon,
    float_up,
    noise_scale,
)
from deniable.aggregator.central.curator._sensitivity import (
    histogram_sensitivity,
    privacy_fields,
)
from deniable.shared.sampling import ByteSource, discrete_laplace, os_source
from deniable.shared.sampling._exp_digits import exp_neg_bounds

__all__ = [
    "MAX_SELECTION_DELTA",
    "KeySelection",
    "SelectedKey",
    "SelectionPlan",
    "check_delta",
    "plan_fields",
    "select_keys",
    "selection_delta",
    "selection_plan",
    "unique_release_bound",
]

MAX_SELECTION_DELTA = Fraction(1, 2)
"""δ must be below 1/2: a key of count K is released with probability >= 1/(1+q) at τ <= K."""

_CHUNK = 4096  # keys drawn at a time: bounded memory, few calls to the sampler


def check_delta(delta: object) -> Fraction:
    """δ as the exact decimal written, in (0, 1/2), else an error naming --delta."""
    if isinstance(delta, bool) or not isinstance(delta, int | float | Fraction):
        raise CuratorError(f"--delta must be a number, got {delta!r}")
    if not isinstance(delta, Fraction) and not math.isfinite(delta):
        raise CuratorError(f"--delta must be in (0, 0.5), got {delta!r}")
    value = delta if isinstance(delta, Fraction) else Fraction(repr(float(delta)))
    if not 0 < value < MAX_SELECTION_DELTA:
        raise CuratorError(f"--delta must be in (0, 0.5), got {delta!r}")
    return value


def unique_release_bound(tau: int, q: Fraction, k: int) -> Fraction:
    """δ(τ) for a given ratio q exactly: max over m of [q^(τ−K+m−1) + (m−1)q^(τ−1)]/(1+q)."""
    if tau < k:
        raise ValueError(f"the bound holds for τ >= K, got τ = {tau}, K = {k}")
    return max(q ** (tau - k + m - 1) + (m - 1) * q ** (tau - 1) for m in range(1, k + 1)) / (1 + q)


def _precision(delta: Fraction) -> int:
    """Bits for e^(−x) bounds whose error is far below δ (2^-64 of it)."""
    return 96 + (delta.denominator // max(delta.numerator, 1)).bit_length()


def selection_delta(tau: int, scale: Fraction, k: int, epsilon: Fraction, bits: int) -> Fraction:
    """A certified upper bound of max(δ(τ), e^ε·(δ(τ) − (1 − q))) at q = e^(−1/scale), τ >= K."""
    if tau < k:
        raise ValueError(f"the bound holds for τ >= K, got τ = {tau}, K = {k}")
    q_low, q_high = exp_neg_bounds(1 / scale, bits)
    first = exp_neg_bounds(Fraction(tau - k) / scale, bits)[1]
    last = k * exp_neg_bounds(Fraction(tau - 1) / scale, bits)[1]
    unique = max(first, last) / (1 + q_low)
    exp_epsilon = 1 / exp_neg_bounds(epsilon, bits)[0]
    return max(unique, exp_epsilon * (unique - (1 - q_high)))


@dataclass(frozen=True)
class SelectionPlan:
    """The public facts of a key selection: its noise, threshold τ and the δ it achieves.

    Attributes:
        epsilon: the privacy loss.
        delta: the δ requested.
        delta_bound: a certified upper bound of the δ achieved (<= ``delta``).
        threshold: τ, the least integer whose bound is <= ``delta``.
        sensitivity: Δ1, K (add-remove) or 2K (replace).
        scale: the noise scale Δ1/ε.
        confidence: the released counts' intervals' confidence.
        half_width: k, the least integer with P(|Z| <= k) >= confidence.
        neighbours: add-remove or replace.
        unit: the privacy unit.
    """

    epsilon: float
    delta: Fraction
    delta_bound: Fraction
    threshold: int
    sensitivity: int
    scale: Fraction
    confidence: float
    half_width: int
    neighbours: str
    unit: PrivacyUnit


def _least_threshold(scale: Fraction, k: int, epsilon: Fraction, delta: Fraction) -> int:
    """The least τ >= K with a certified bound <= δ: a float guess, then bisection."""
    bits = _precision(delta)

    def holds(tau: int) -> bool:
        return selection_delta(tau, scale, k, epsilon, bits) <= delta

    b = float(scale)
    target = math.log(1 / float(delta))
    guess = max(k, math.ceil(max(k + b * target, 1 + b * (target + math.log(k)))))
    low, high = k - 1, guess  # invariant: τ = low fails (or is below K), τ = high holds
    step = 1
    while not holds(high):
        low, high, step = high, high + step, 2 * step
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def selection_plan(
    epsilon: float | Fraction,
    delta: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
) -> SelectionPlan:
    """τ, the noise and the δ achieved for a key selection: public facts only, no data."""
    eps = check_curator_epsilon(epsilon)
    level = check_confidence(confidence)
    wanted = check_delta(delta)
    sensitivity = histogram_sensitivity(neighbours, unit)
    scale = noise_scale(epsilon, sensitivity)
    k = unit.max_contributions
    tau = _least_threshold(scale, k, exact_epsilon(epsilon), wanted)
    bound = selection_delta(tau, scale, k, exact_epsilon(epsilon), _precision(wanted))
    half = discrete_half_width(scale, level)
    return SelectionPlan(eps, wanted, bound, tau, sensitivity, scale, level, half, neighbours, unit)


def _chunks(counts: Iterable[tuple[Value, int]]) -> Iterator[list[tuple[Value, int]]]:
    """The present keys (count >= 1), a chunk at a time; a bad count is named."""
    items = iter(counts)
    while chunk := list(islice(items, _CHUNK)):
        present = []
        for key, count in chunk:
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise CuratorError(f"the count of key {key!r} must be an integer >= 0")
            if count:
                present.append((key, count))
        if present:
            yield present


def select_released(
    counts: Iterable[tuple[Value, int]], plan: SelectionPlan, source: ByteSource
) -> dict[Value, int]:
    """The keys whose noisy count is >= τ, with it; only those are kept (streaming)."""
    released: dict[Value, int] = {}
    for chunk in _chunks(counts):
        noise = discrete_laplace(plan.scale, len(chunk), source)
        for (key, count), z in zip(chunk, noise.tolist(), strict=True):
            if key in released:
                raise CuratorError(f"key {key!r} is given twice")
            if count + z >= plan.threshold:
                released[key] = count + z
    return released


@dataclass(frozen=True)
class SelectedKey:
    """A released key: its noisy count and the interval covering its true count."""

    key: Value
    released: int
    low: int
    high: int


@dataclass(frozen=True)
class KeySelection:
    """The keys released by a selection, their noisy counts and the plan's public facts."""

    plan: SelectionPlan
    keys: tuple[SelectedKey, ...]

    def to_dict(self) -> dict[str, Any]:
        """The fields a ``--json`` output carries."""
        plan = self.plan
        return {
            "released": [
                {"key": item.key, "released": item.released, "low": item.low, "high": item.high}
                for item in self.keys
            ],
            **plan_fields(plan),
            "interval": {
                "confidence": plan.confidence,
                "half_width": plan.half_width,
                "method": INTERVAL_METHOD + " (each released key on its own)",
                "covers": (
                    "each released key's count of matching rows, each unit bounded to K "
                    "(coverage is per key before selection: keys just above τ are selected "
                    "for upward noise)"
                ),
            },
        }


def plan_fields(plan: SelectionPlan) -> dict[str, Any]:
    """ε, δ (requested and achieved), τ, noise and method of a selection, for outputs."""
    return {
        "epsilon": plan.epsilon,
        "delta": float_up(plan.delta_bound),
        "delta_requested": float(plan.delta),
        "threshold": plan.threshold,
        "sensitivity": plan.sensitivity,
        "noise_scale": float(plan.scale),
        **privacy_fields(plan.neighbours, plan.unit),
        "method": SELECTION_METHOD,
        "suppressed": "keys whose noisy count is below the threshold are not released",
    }


SELECTION_METHOD = (
    "DP key selection (Korolova et al. 2009; Wilson et al. 2020): each present key's count "
    "plus discrete Laplace noise of scale Δ1/ε, released iff >= τ; δ bounds the release of "
    "any key only the differing unit holds: max(q^(τ−K), K·q^(τ−1))/(1+q), q = e^(−ε/Δ1)"
)


def select_keys(
    counts: Iterable[tuple[Value, int]],
    epsilon: float | Fraction,
    delta: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    confidence: float = 0.95,
    source: ByteSource = os_source,
) -> KeySelection:
    """The keys of an unknown domain whose noisy count reaches τ, (ε, δ)-DP.

    Args:
        counts: each key present in the data with its exact count (each unit bounded to K
            rows), read once as a stream; keys with count 0 are skipped. Keys must be
            distinct (the engine's GROUP BY): only released keys are kept, so only those
            are checked.
        epsilon: the privacy loss.
        delta: the δ wanted, in (0, 0.5); τ is the least integer whose certified bound
            is <= it, and the bound achieved is stated.
        neighbours: add-remove or replace (Δ1 = K or 2K).
        unit: the privacy unit.
        confidence: the released counts' intervals' confidence.
        source: random bytes (the OS CSPRNG unless a seeded source is given for tests).
    """
    plan = selection_plan(epsilon, delta, neighbours, unit, confidence=confidence)
    k = plan.half_width
    released = select_released(counts, plan, source)
    keys = tuple(
        SelectedKey(key, value, max(1, value - k), value + k) for key, value in released.items()
    )
    return KeySelection(plan, keys)
