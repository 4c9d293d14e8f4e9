"""Multiple-choice questions: GRR, OUE and OLH specifications with exact ε, p*, q*, variances."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, TypeVar

from deniable.shared._exact import exp_at_least
from deniable.shared._frequency_oracle import (
    CategoricalSpec,
    alpha_for,
    check_alpha,
    check_epsilon,
    check_options,
    grr_ratio,
    most_useful,
    times,
)
from deniable.shared._universal_hash import HASH_MAX_RANGE, HASH_PRIME, check_hash_range
from deniable.shared._validate import as_real, check_finite

__all__ = [
    "CATEGORICAL_KINDS",
    "GrrSpec",
    "OlhSpec",
    "OueSpec",
    "categorical_spec",
    "choose_categorical",
]

CATEGORICAL_KINDS: dict[str, str] = {
    "auto": "GRR when k < 3e^ε + 2, otherwise OLH (the lower-variance of the two)",
    "grr": "generalized randomized response: one option is reported",
    "oue": "optimized unary encoding: one bit per option is reported (k bits)",
    "olh": "optimized local hashing: a hash seed and a value in [g] are reported",
}

_Spec = TypeVar("_Spec", bound=CategoricalSpec)


@dataclass(frozen=True)
class GrrSpec(CategoricalSpec):
    """Generalized (k-ary) randomized response in the seed's α form.

    With probability α the true option is reported, otherwise an option drawn uniformly from
    all k (possibly the true one): p* = α + (1−α)/k, q* = (1−α)/k and
    ε = ln(1 + kα/(1−α)) exactly. k = 2 is yes/no randomized response with the same ε.

    Attributes:
        k: number of options.
        alpha: probability of keeping the true option, 0 < α <= 1 (α = 1: no privacy).

    Example:
        >>> spec = GrrSpec(k=4, alpha=0.5)
        >>> spec.p_star, spec.q_star, round(spec.epsilon, 4)
        (0.625, 0.125, 1.6094)
    """

    kind: ClassVar[str] = "grr"

    alpha: float

    def _check_parameters(self) -> None:
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @classmethod
    def from_epsilon(cls: type[_Spec], k: int, epsilon: float) -> _Spec:
        """Return GRR over k options with the largest α certified at ``epsilon``.

        α = (e^ε − 1)/(e^ε + k − 1), moved by a few ulps so that it is certified, never above.
        """
        count, eps = check_options(k), check_epsilon(epsilon)
        alpha = most_useful(alpha_for(eps, count), eps, lambda a: grr_ratio(a, count), 0.0, 1.0)
        if alpha <= 0:
            raise ValueError(f"epsilon={eps!r} is too small to represent: alpha would be 0")
        return cls(count, alpha)  # type: ignore[call-arg]

    @property
    def p_star_exact(self) -> Fraction:
        """α + (1−α)/k exactly."""
        a = Fraction(self.alpha)
        return a + (1 - a) / self.k

    @property
    def q_star_exact(self) -> Fraction:
        """(1−α)/k exactly."""
        return (1 - Fraction(self.alpha)) / self.k

    @property
    def privacy_ratio(self) -> Fraction | None:
        """p*/q* = 1 + kα/(1−α) exactly; None when α = 1."""
        return grr_ratio(self.alpha, self.k)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        if not self.is_private:
            return (
                "No privacy: your true choice is always sent as it is "
                "(alpha = 1, epsilon = infinity)."
            )
        others = "the other option" if self.k == 2 else f"each of the {self.k - 1} other options"
        return (
            f"Your report is your true choice with probability {self.p_star:.0%} and "
            f"{others} with probability {self.q_star:.0%}, so any report is at most "
            f"{times(self.p_star / self.q_star)} times as likely from one choice as from "
            f"another (epsilon = {self.epsilon:.2f})."
        )

    def _parameters(self) -> dict[str, Any]:
        return {"alpha": self.alpha}


@dataclass(frozen=True)
class OueSpec(CategoricalSpec):
    """Optimized unary encoding: one bit per option is reported.

    The true option's bit is 1 with probability p* = 1/2 and every other bit with
    probability q*, independently; two inputs change two bits, so
    ε = ln(p*(1−q*)/((1−p*)q*)) = ln((1−q)/q) exactly. Optimal q = 1/(e^ε + 1).

    Attributes:
        k: number of options (and bits per report).
        q: probability that a bit other than the true option's is 1, 0 < q < 1/2.

    Example:
        >>> spec = OueSpec(k=3, q=0.25)
        >>> spec.p_star, spec.q_star, round(spec.epsilon, 4)
        (0.5, 0.25, 1.0986)
    """

    kind: ClassVar[str] = "oue"

    q: float

    def _check_parameters(self) -> None:
        value = check_finite("q", as_real("q", self.q))
        if not (0.0 < value < 0.5):
            raise ValueError(f"q must be strictly between 0 and 1/2, got {value!r}")
        object.__setattr__(self, "q", value)

    @classmethod
    def from_epsilon(cls: type[_Spec], k: int, epsilon: float) -> _Spec:
        """Return OUE over k options with the smallest q certified at ``epsilon``.

        q = 1/(e^ε + 1), moved by a few ulps so that it is certified, never above.
        """
        count, eps = check_options(k), check_epsilon(epsilon)
        tiny = math.exp(-eps)
        q = most_useful(tiny / (1.0 + tiny), eps, _oue_ratio, 0.5, 0.0)
        if q >= 0.5:
            raise ValueError(f"epsilon={eps!r} is too small to represent: q would be 1/2")
        return cls(count, q)  # type: ignore[call-arg]

    @property
    def p_star_exact(self) -> Fraction:
        """1/2."""
        return Fraction(1, 2)

    @property
    def q_star_exact(self) -> Fraction:
        """The parameter q, exactly."""
        return Fraction(self.q)

    @property
    def privacy_ratio(self) -> Fraction | None:
        """(1−q)/q exactly."""
        return _oue_ratio(self.q)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        return (
            f"Your report is one yes/no flag per option: your true choice's flag is set with "
            f"probability 50% and every other flag with probability {self.q:.0%}, so any "
            f"report is at most {times((1 - self.q) / self.q)} times as likely from one "
            f"choice as from another (epsilon = {self.epsilon:.2f})."
        )

    def _parameters(self) -> dict[str, Any]:
        return {"q": self.q}


def _oue_ratio(q: float) -> Fraction | None:
    if q <= 0:
        return None
    exact = Fraction(q)
    return (1 - exact) / exact


@dataclass(frozen=True)
class OlhSpec(CategoricalSpec):
    """Optimized local hashing: a random universal hash, then GRR (α form) over its g values.

    The participant draws a, b uniformly from [0, P), P = 2^61 − 1, hashes the true option x
    to H(x) = ((a·x + b) mod P) mod g (see :func:`shared.universal_hash`) and reports
    (a, b, y), where y is H(x) with probability α and otherwise uniform over [0, g). A report
    supports v when H(v) = y. p* = α + (1−α)/g exactly; for v ≠ x, H(v) is independent of
    H(x) and within 1/P of uniform, so q* = 1/g is off by at most 2^−61 (negligible).
    ε = ln(1 + gα/(1−α)) exactly, whatever the hash.

    Attributes:
        k: number of options.
        g: hash range, 2 <= g <= 2^32 − 1; optimal g = round(e^ε) + 1.
        alpha: probability of keeping the hashed value, 0 < α <= 1 (α = 1: no privacy).

    Example:
        >>> spec = OlhSpec(k=100, g=4, alpha=0.5)
        >>> spec.p_star, spec.q_star, round(spec.epsilon, 4)
        (0.625, 0.25, 1.6094)
    """

    kind: ClassVar[str] = "olh"

    g: int
    alpha: float

    def _check_parameters(self) -> None:
        object.__setattr__(self, "g", check_hash_range(self.g))
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @classmethod
    def from_epsilon(cls: type[_Spec], k: int, epsilon: float) -> _Spec:
        """Return OLH over k options with g = round(e^ε) + 1 and the largest α certified.

        g is at least 2 and at most 2^32 − 1 (reached at ε ≈ 22.2); α = (e^ε − 1)/(e^ε + g − 1),
        moved by a few ulps so that it is certified at ``epsilon``, never above.
        """
        count, eps = check_options(k), check_epsilon(epsilon)
        if eps >= math.log(HASH_MAX_RANGE):
            g = HASH_MAX_RANGE
        else:
            g = min(max(2, math.floor(math.exp(eps) + 0.5) + 1), HASH_MAX_RANGE)
        alpha = most_useful(alpha_for(eps, g), eps, lambda a: grr_ratio(a, g), 0.0, 1.0)
        if alpha <= 0:
            raise ValueError(f"epsilon={eps!r} is too small to represent: alpha would be 0")
        return cls(count, g, alpha)  # type: ignore[call-arg]

    @property
    def p_star_exact(self) -> Fraction:
        """α + (1−α)/g exactly."""
        a = Fraction(self.alpha)
        return a + (1 - a) / self.g

    @property
    def q_star_exact(self) -> Fraction:
        """1/g (the true q* is within 1/P = 1/(2^61 − 1) of it)."""
        return Fraction(1, self.g)

    @property
    def q_star_bias_bound(self) -> Fraction:
        """Bound on |true q* − 1/g|: 1/P with P = 2^61 − 1."""
        return Fraction(1, HASH_PRIME)

    @property
    def privacy_ratio(self) -> Fraction | None:
        """1 + gα/(1−α) exactly; None when α = 1."""
        return grr_ratio(self.alpha, self.g)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        if not self.is_private:
            return (
                "No privacy: the hashed group of your true choice is always sent as it is "
                "(alpha = 1, epsilon = infinity)."
            )
        other = (1.0 - self.alpha) / self.g
        return (
            f"Your report is a random hash that sorts the {self.k} options into {self.g} "
            f"groups, plus a group number that is your true choice's group with probability "
            f"{self.p_star:.0%} and each other group with probability {other:.0%}, so any "
            f"report is at most {times(self.p_star / other)} times as likely from one choice "
            f"as from another (epsilon = {self.epsilon:.2f})."
        )

    def _parameters(self) -> dict[str, Any]:
        return {"g": self.g, "alpha": self.alpha}


def choose_categorical(k: int, epsilon: float) -> GrrSpec | OlhSpec:
    """The ``auto`` rule: GRR iff k < 3e^ε + 2 (decided exactly), otherwise OLH.

    GRR's small-f variance (k−2+e^ε)/(e^ε−1)² is below OLH's 4e^ε/(e^ε−1)² exactly when
    k − 2 < 3e^ε. e^ε is irrational for a float ε > 0, so there are no ties.

    Example:
        >>> choose_categorical(5, 1.0).kind, choose_categorical(20, 1.0).kind
        ('grr', 'olh')
    """
    count, eps = check_options(k), check_epsilon(epsilon)
    if count <= 2 or exp_at_least(eps, Fraction(count - 2, 3)):
        return GrrSpec.from_epsilon(count, eps)
    return OlhSpec.from_epsilon(count, eps)


def categorical_spec(
    kind: str, k: int, epsilon: float | None = None, alpha: float | None = None
) -> CategoricalSpec:
    """Build a multiple-choice mechanism by name (see ``CATEGORICAL_KINDS``).

    Args:
        kind: ``auto``, ``grr``, ``oue`` or ``olh``.
        k: number of options, 2..1024.
        epsilon: target ε; the most useful mechanism certified at it is returned.
        alpha: GRR only, instead of ``epsilon``: the keep-probability α.

    Raises:
        ValueError: unknown kind, or a missing or conflicting epsilon/alpha (named).

    Example:
        >>> categorical_spec("grr", 4, alpha=0.5)
        GrrSpec(k=4, alpha=0.5)
    """
    if not isinstance(kind, str) or kind not in CATEGORICAL_KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of: {', '.join(CATEGORICAL_KINDS)}")
    if alpha is not None and kind != "grr":
        raise ValueError(f"alpha={alpha!r} applies only to kind 'grr', not {kind!r}; give epsilon")
    if alpha is not None and epsilon is not None:
        raise ValueError(f"give epsilon or alpha, not both (epsilon={epsilon!r}, alpha={alpha!r})")
    if alpha is not None:
        return GrrSpec(k, alpha)
    if epsilon is None:
        hint = "epsilon or alpha" if kind == "grr" else "epsilon"
        raise ValueError(f"kind {kind!r} needs {hint}")
    if kind == "auto":
        return choose_categorical(k, epsilon)
    if kind == "grr":
        return GrrSpec.from_epsilon(k, epsilon)
    if kind == "oue":
        return OueSpec.from_epsilon(k, epsilon)
    return OlhSpec.from_epsilon(k, epsilon)
