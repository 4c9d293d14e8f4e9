"""Generalized (k-ary) randomized response in the α form: keep the option, or draw one."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms._frequency_oracle import FrequencyOracle
from deniable.shared.mechanisms._options import (
    as_option,
    as_options,
    check_below,
    randomized_response,
)
from deniable.shared.mechanisms._parameters import (
    alpha_for,
    check_alpha,
    check_epsilon,
    check_options,
    grr_ratio,
    most_useful,
    times,
)
from deniable.shared.sampling import source_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["GeneralizedRandomizedResponse"]


@dataclass(frozen=True)
class GeneralizedRandomizedResponse(FrequencyOracle):
    """k-ary randomized response (GRR) in the α form.

    With probability α the true option is reported, otherwise an option drawn uniformly from
    all k (possibly the true one): p* = α + (1−α)/k, q* = (1−α)/k and
    ε = ln(1 + kα/(1−α)) exactly. k = 2 is yes/no randomized response with the same ε.
    Perturbation draws one exact Bernoulli(α) and, for replaced answers, an exactly uniform
    option by rejection (no modulo bias), from the OS CSPRNG.

    Attributes:
        k: number of options.
        alpha: probability of keeping the true option, 0 < α <= 1 (α = 1: no privacy).

    Example:
        >>> grr = GeneralizedRandomizedResponse(k=4, alpha=0.5)
        >>> grr.p_star, grr.q_star, round(grr.epsilon, 4)
        (0.625, 0.125, 1.6094)
        >>> grr.perturb(2) in range(4)
        True
    """

    name: ClassVar[str] = "grr"
    title: ClassVar[str] = "generalized randomized response"
    value_field: ClassVar[str] = "option"
    value_fields: ClassVar[tuple[str, ...]] = ("option_fixed", "option")
    one_option_per_report: ClassVar[bool] = True

    alpha: float

    def _check_parameters(self) -> None:
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @classmethod
    def from_epsilon(cls, k: int, epsilon: float) -> GeneralizedRandomizedResponse:
        """GRR over k options with the largest α certified at ``epsilon``.

        α = (e^ε − 1)/(e^ε + k − 1), moved by a few ulps so that it is certified, never above.
        """
        count, eps = check_options(k), check_epsilon(epsilon)
        alpha = most_useful(alpha_for(eps, count), eps, lambda a: grr_ratio(a, count), 0.0, 1.0)
        if alpha <= 0:
            raise ValueError(f"epsilon={eps!r} is too small to represent: alpha would be 0")
        return cls(count, alpha)

    @classmethod
    def from_question(cls, question: pb.Question) -> GeneralizedRandomizedResponse:
        """GRR over the question's options with its ``grr.alpha``."""
        return cls(cls.options_of(question), question.mechanism.grr.alpha)

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

    def parameters(self) -> dict[str, float]:
        """``alpha``."""
        return {"alpha": self.alpha}

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

    def perturb(self, value: int | np.integer[Any], rng: np.random.Generator | None = None) -> int:
        """The reported option for one true option."""
        return int(self.perturb_many(as_option(value, self.k), rng))

    def perturb_many(
        self, truths: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[Any]:
        """Reported options (same shape, int64): the truth w.p. α, else uniform over all k."""
        truth = as_options(truths, self.k, "values")
        return randomized_response(truth, self.k, self.alpha, source_for(rng))

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"option_fixed": index}`` per report: 4 bytes whatever the option.

        Older clients sent ``option``, a varint one byte longer from option 128 on, which
        told anyone who sees message sizes which half of the options was reported.
        """
        return [{"option_fixed": int(option)} for option in np.asarray(reports).ravel().tolist()]

    def show_value(self, report: pb.Report) -> str:
        """``option N``, counting from 1."""
        return f"option {self.value_of(report) + 1}"

    def decode(self, values: Any) -> NDArray[Any]:
        """Received option indices (int64), each below k."""
        options = np.asarray(values, dtype=np.int64)
        check_below(options, self.k, "option", f"k={self.k}")
        return options

    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        """Reports per option."""
        return np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.k)
