"""Frequency oracles: one of k options reported so that each option's share can be debiased."""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from deniable.shared._validate import as_count, check_unit_interval
from deniable.shared.mechanisms._anytime import frequencies_anytime
from deniable.shared.mechanisms._base import Estimate, Mechanism, Tally
from deniable.shared.mechanisms._frequency_estimate import (
    FrequencyEstimate,
    estimate_frequencies,
    exact_frequency_coverage,
    support_variance,
)
from deniable.shared.mechanisms._parameters import check_options
from deniable.shared.stats import Estimand, check_estimand
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["FrequencyOracle"]


@dataclass(frozen=True)
class FrequencyOracle(Mechanism):
    """A pure frequency oracle over k options, numbered 0..k−1 (Wang et al., USENIX Sec. 2017).

    p* = P(report supports v | true option v), q* = P(report supports v | true option ≠ v).
    From n reports of which C_v support v, f̂_v = (C_v/n − q*)/(p* − q*) is unbiased, and
    C_v ~ Binomial(n, q* + f_v(p* − q*)) when participants are i.i.d., which gives exact
    binomial intervals and exact coverage. The running tally is the k support counts.

    Attributes:
        k: number of options, 2 <= k <= 1024.
    """

    question_type: ClassVar[str] = "categorical"
    also_answers: ClassVar[tuple[str, ...]] = ("joint",)
    one_option_per_report: ClassVar[bool] = False
    """Whether every report supports exactly one option (then the counts sum to n)."""

    k: int
    _p: float = field(init=False, repr=False, compare=False)
    _q: float = field(init=False, repr=False, compare=False)
    _gap: float = field(init=False, repr=False, compare=False)
    _rest: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_options(self.k))
        self._check_parameters()
        p, q = self.p_star_exact, self.q_star_exact
        self._set_epsilon()
        object.__setattr__(self, "_p", float(p))
        object.__setattr__(self, "_q", float(q))
        object.__setattr__(self, "_gap", float(p - q))
        object.__setattr__(self, "_rest", float(1 - p - q))

    @abstractmethod
    def _check_parameters(self) -> None:
        """Validate and normalize the mechanism's own parameters."""

    @property
    @abstractmethod
    def p_star_exact(self) -> Fraction:
        """p* as an exact rational (the float parameters are dyadic rationals)."""

    @property
    @abstractmethod
    def q_star_exact(self) -> Fraction:
        """q* as an exact rational."""

    @abstractmethod
    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        """C_v for v = 0..k−1: how many of ``reports`` (decoded) support each option."""

    @property
    def p_star(self) -> float:
        """P(report supports v | true option is v)."""
        return self._p

    @property
    def q_star(self) -> float:
        """P(report supports v | true option is another one)."""
        return self._q

    @staticmethod
    def options_of(question: pb.Question) -> int:
        """The number of options of the question this mechanism answers.

        A joint question's options are its cells: the product of its parts' sizes (a
        yes/no part 2, a multiple-choice part its options, a numeric part its bins).
        """
        if question.WhichOneof("kind") == "joint":
            return math.prod(_part_size(part) for part in question.joint.parts)
        return len(question.categorical.options)

    # --- variances ------------------------------------------------------------------------

    def variance_unchecked(self, f: Any, n: int, estimand: Estimand) -> Any:
        """:meth:`variance` without validation; ``f`` may be a float or a numpy array."""
        return support_variance(self._q, self._gap, self._rest, f, n, estimand)

    def variance(self, f: float, n: int, estimand: Estimand = "population") -> float:
        """Variance of f̂_v from n reports when option v's true share is f.

        ``respondents`` (these n answers fixed):
        [q*(1−q*) + f(p*−q*)(1−p*−q*)]/(n(p*−q*)²); ``population`` (participants i.i.d.)
        adds f(1−f)/n.
        """
        share = check_unit_interval("f", f)
        count = as_count("n", n, minimum=1)
        return float(self.variance_unchecked(share, count, check_estimand(estimand)))

    def covariance_unchecked(self, f: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """The k×k covariance of the raw estimates f̂ from n i.i.d. participants (population).

        Per participant, with s_v the report's support of v and z = (s − q*)/(p* − q*):
        Cov(z) = E_x[Cov(s | x)]/(p* − q*)² + diag(f) − ffᵀ. The diagonal is
        :meth:`variance_unchecked`. Off the diagonal, when every report supports exactly one
        option (GRR), Cov(s_u, s_v | x) = −P(u | x)P(v | x), whose mean over x is
        −[q*² + q*(p* − q*)(f_u + f_v)]; otherwise the supports of two options are
        independent given x (OUE's bits), so that term is 0 and Cov(f̂_u, f̂_v) = −f_u f_v/n.
        (OLH's supports are not: collisions of the hash of three values correlate them;
        OLH does not answer joint questions, which need this.)
        """
        share = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
        cov = -np.outer(share, share) / n
        if self.one_option_per_report:
            q = self._q
            pair = q * q + q * self._gap * (share[:, None] + share[None, :])
            cov = cov - pair / (n * self._gap**2)
        np.fill_diagonal(cov, self.variance_unchecked(share, n, "population"))
        return np.asarray(cov, dtype=np.float64)

    def small_f_variance(self, n: int) -> float:
        """Variance at f = 0, q*(1−q*)/(n(p*−q*)²): the usual n·Var figure over n."""
        return self.variance(0.0, n, "respondents")

    def worst_variance(self, n: int, estimand: Estimand = "population") -> float:
        """Largest :meth:`variance` over all true shares f in [0, 1] (for sample sizes).

        The variance is linear (respondents) or concave quadratic (population) in f, so the
        maximum is at f = 0, f = 1 or the vertex f = (1 + (1−p*−q*)/(p*−q*))/2.
        """
        count = as_count("n", n, minimum=1)
        which = check_estimand(estimand)
        vertex = min(max((1.0 + self._rest / self._gap) / 2.0, 0.0), 1.0)
        return max(float(self.variance_unchecked(f, count, which)) for f in (0.0, 1.0, vertex))

    def estimate_variance(self, n: int, share: float | None = None) -> float:
        """Var(f̂) from n participants at share ``share``, or the worst share when None."""
        if share is None:
            return self.worst_variance(n, "population")
        return self.variance(share, n, "population")

    # --- the aggregator's side ------------------------------------------------------------

    def tally(self, reports: Any) -> list[int]:
        """The k support counts of these reports."""
        return [int(c) for c in self.support_counts(reports).tolist()]

    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> Estimate:
        """Every option's share (:meth:`estimate_frequencies`).

        ``anytime``: confidence sequences instead (``method`` does not apply), covering all
        options at once when ``simultaneous``.
        """
        if anytime:
            counts = np.zeros(self.k, dtype=np.int64)
            counts[: len(tally.sums)] = tally.sums[: self.k]
            return frequencies_anytime(self, counts, tally.n, confidence, simultaneous)
        return self.estimate_frequencies(tally, confidence, method, simultaneous=simultaneous)

    def estimate_frequencies(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
    ) -> FrequencyEstimate:
        """Every option's share, raw and projected onto the simplex, with intervals.

        The intervals contain the projected estimates; they are per option, or with
        ``simultaneous`` cover all k shares at once (see :func:`estimate_frequencies`).
        """
        counts = np.zeros(self.k, dtype=np.int64)
        counts[: len(tally.sums)] = tally.sums[: self.k]
        return estimate_frequencies(
            counts, tally.n, self, confidence, "population", method, simultaneous=simultaneous
        )

    def exact_coverage(self, n: int, share: float, confidence: float, method: str) -> float:
        """P(an option's interval covers its share f), summed over the binomial pmf."""
        return exact_frequency_coverage(n, share, self, confidence, method)

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters and privacy figures as a JSON-ready dict."""
        return {
            "mechanism": self.name,
            "k": self.k,
            **self.parameters(),
            "epsilon": self.epsilon,
            "p_star": self.p_star,
            "q_star": self.q_star,
            "private": self.is_private,
        }


def _part_size(part: pb.JointPart) -> int:
    """How many values a joint question's part has (0 when it has no kind)."""
    kind = part.WhichOneof("kind")
    if kind == "binary":
        return 2
    if kind == "categorical":
        return len(part.categorical.options)
    if kind == "numeric":
        return max(len(part.numeric.edges) - 1, 0)
    return 0
