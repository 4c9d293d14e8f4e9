"""Randomized response for yes/no questions: GRR over {no, yes}, reported as one bit."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import exp_at_least
from deniable.shared._validate import as_count, check_unit_interval
from deniable.shared.mechanisms._anytime import proportion_anytime
from deniable.shared.mechanisms._base import ReportValueError, Tally
from deniable.shared.mechanisms._parameters import check_epsilon, percent
from deniable.shared.mechanisms._proportion import (
    ProportionEstimate,
    debias,
    estimate_proportion,
    report_rate,
)
from deniable.shared.mechanisms._rr_coverage import exact_coverage
from deniable.shared.mechanisms.grr import GeneralizedRandomizedResponse
from deniable.shared.sampling import bernoulli, source_for
from deniable.shared.stats import Estimand, check_estimand
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["RandomizedResponse"]


def _as_bits(bits: ArrayLike, name: str) -> NDArray[np.bool_]:
    """Validate true answers: booleans or integers 0/1, any shape."""
    array = np.asarray(bits)
    if array.dtype == np.bool_:
        return array
    if array.size == 0:
        return np.zeros(array.shape, dtype=bool)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be booleans or 0/1 integers, got dtype {array.dtype}")
    bad = np.flatnonzero((array != 0) & (array != 1))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = f" at index {tuple(map(int, index))}" if array.ndim else ""
        raise ValueError(f"{name} must be 0 or 1, got {array[index].item()!r}{where}")
    return array.astype(bool)


@dataclass(frozen=True)
class RandomizedResponse(GeneralizedRandomizedResponse):
    """Warner's randomized response with keep-probability α: GRR over k = 2 options.

    With probability α the participant reports the true answer, otherwise a fair coin, so
    the report equals the truth with probability (1+α)/2 and ε = ln((1+α)/(1−α)) exactly
    (GRR's ln(1 + kα/(1−α)) at k = 2). α = 1 is representable but offers no privacy.
    Option 1 is "yes"; the running tally is the number of yes reports, and the estimate is
    the yes-share. Perturbation draws one exact Bernoulli((1+α)/2) "keep" per answer from
    the OS CSPRNG, about one random byte per report.

    Attributes:
        alpha: probability of keeping the true answer, 0 < α <= 1.

    Example:
        >>> rr = RandomizedResponse(alpha=0.5)
        >>> round(rr.epsilon, 4), rr.epsilon_approx
        (1.0986, 1.0)
        >>> rr.perturb(True) in (True, False)
        True
    """

    name: ClassVar[str] = "randomized_response"
    title: ClassVar[str] = "randomized response"
    question_type: ClassVar[str] = "binary"
    also_answers: ClassVar[tuple[str, ...]] = ()
    value_field: ClassVar[str] = "bit"
    value_fields: ClassVar[tuple[str, ...]] = ()

    k: int = field(default=2, init=False, repr=False)

    @classmethod
    def from_epsilon(cls, epsilon: float) -> RandomizedResponse:  # type: ignore[override]
        """The mechanism with the largest α whose exact ε is at most ``epsilon``.

        α = tanh(ε/2), adjusted by at most a few units in the last place so that the
        mechanism is certified at the requested ε, never above it.
        """
        eps = check_epsilon(epsilon, alpha_hint=True)
        alpha = math.tanh(eps / 2)

        def ratio(a: float) -> Fraction | None:
            return None if a >= 1.0 else (1 + Fraction(a)) / (1 - Fraction(a))

        while alpha > 0 and not exp_at_least(eps, ratio(alpha)):
            alpha = math.nextafter(alpha, 0.0)
        while alpha < 1 and exp_at_least(eps, ratio(math.nextafter(alpha, 1.0))):
            alpha = math.nextafter(alpha, 1.0)
        if alpha <= 0:
            raise ValueError(f"epsilon={eps!r} is too small to represent: alpha would be 0")
        return cls(alpha=alpha)

    @classmethod
    def from_question(cls, question: pb.Question) -> RandomizedResponse:
        """Randomized response with the question's ``randomized_response.alpha``."""
        return cls(question.mechanism.randomized_response.alpha)

    @property
    def p_truth(self) -> float:
        """Probability that the report equals the true answer, (1+α)/2."""
        return (1.0 + self.alpha) / 2.0

    @property
    def p_truth_exact(self) -> Fraction:
        """(1+α)/2 as an exact rational; the float α is a dyadic rational, so this is exact."""
        return (1 + Fraction(self.alpha)) / 2

    @property
    def epsilon_approx(self) -> float:
        """The textbook approximation 2α; it always understates ε. Label it as such."""
        return 2.0 * self.alpha

    def report_probability(self, p: Any) -> Any:
        """λ = P(report = yes) = αp + (1−α)/2 for a true share p (float or array)."""
        return report_rate(self, p)

    def debias(self, lam: Any) -> Any:
        """Invert λ = αp + (1−α)/2: p = (λ − (1−α)/2)/α (unbiased when λ is Y/n)."""
        return debias(self, lam)

    def estimator_variance(self, p: float, n: int, estimand: Estimand = "population") -> float:
        """Variance of the unbiased estimate p̂ from n reports when the true share is p.

        ``population``: λ(1−λ)/(α²n); ``respondents``: (1−α²)/(4α²n). They differ by p(1−p)/n.
        """
        count = as_count("n", n, minimum=1)
        share = check_unit_interval("p", p)
        a2 = self.alpha * self.alpha
        if check_estimand(estimand) == "population":
            lam = self.report_probability(share)
            return float(lam * (1.0 - lam) / (a2 * count))
        return (1.0 - a2) / (4.0 * a2 * count)

    def estimate_variance(self, n: int, share: float | None = None) -> float:
        """Var(p̂) from n participants at share ``share`` (the worst, ½, when None)."""
        return self.estimator_variance(0.5 if share is None else share, n, "population")

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        if not self.is_private:
            return (
                "No privacy: your true answer is always sent as it is "
                "(alpha = 1, epsilon = infinity)."
            )
        # From the exact ratio: in floats, (1+α)/2 rounds to 1 for α = 1 − 2^-53, the largest
        # α < 1, whose ratio (1+α)/(1−α) = 2^54 − 1 is finite (ε ≈ 37.4).
        assert self.privacy_ratio is not None
        ratio = float(self.privacy_ratio)
        shown = f"{ratio:.2f}" if ratio < 1e6 else f"{ratio:.3g}"
        return (
            f"The server can guess your true answer right with probability "
            f"{percent(self.p_truth_exact)}; any report is at most {shown} times as likely "
            f"from one answer as from the other (epsilon = {self.epsilon:.2f})."
        )

    def describe(self) -> dict[str, Any]:
        """The mechanism's parameters and privacy figures, with wire-contract field names."""
        return {
            "mechanism": self.name,
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "epsilon_approx": self.epsilon_approx,
            "p_truth": self.p_truth,
            "private": self.is_private,
        }

    def perturb(
        self, bit: bool | int | np.bool_ | np.integer[Any], rng: np.random.Generator | None = None
    ) -> bool:
        """The randomized report for one true answer."""
        truth = _as_bits(bit, "bit")
        if truth.ndim != 0:
            raise ValueError(
                f"bit must be a single answer, got shape {truth.shape}; use perturb_many for arrays"
            )
        return bool(self.perturb_many(truth, rng))

    def perturb_many(
        self, truths: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Randomized reports for an array of true answers (same shape, dtype bool).

        Each report equals its true answer with probability (1+α)/2, independently.
        """
        truth = _as_bits(truths, "bits")
        keep = bernoulli(self.p_truth_exact, truth.size, source_for(rng)).reshape(truth.shape)
        return np.equal(truth, keep)

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"bit": answer}`` per report."""
        return [{"bit": bool(bit)} for bit in np.asarray(reports).ravel().tolist()]

    def show_value(self, report: pb.Report) -> str:
        """``yes`` or ``no``."""
        return "yes" if report.bit else "no"

    def decode(self, values: Any) -> NDArray[np.bool_]:
        """Received bits (the decoder's uint8 0/1) as booleans."""
        bits = np.asarray(values)
        if bits.dtype != np.bool_:
            out = np.flatnonzero(bits > 1)
            if out.size:
                raise ReportValueError(int(out[0]), "bit", f"{bits[out[0]]} is not 0 or 1")
        return bits.astype(bool)

    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        """[no reports, yes reports]."""
        yes = int(np.count_nonzero(reports))
        return np.array([np.size(reports) - yes, yes], dtype=np.int64)

    def tally(self, reports: Any) -> list[int]:
        """[yes reports]: a yes/no question's running sum is its yes count."""
        return [int(np.count_nonzero(reports))]

    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> ProportionEstimate:
        """The yes-share, raw and clipped, with its interval (exact for Clopper–Pearson).

        ``anytime``: a confidence sequence instead (``method`` does not apply).
        """
        if anytime:
            return proportion_anytime(self, tally.ones, tally.n, confidence)
        return estimate_proportion(tally.ones, tally.n, self.alpha, confidence, method)

    def exact_coverage(self, n: int, share: float, confidence: float, method: str) -> float:
        """P(the interval covers the yes-share), summed over the binomial pmf."""
        return exact_coverage(n, share, self.alpha, confidence, method)
