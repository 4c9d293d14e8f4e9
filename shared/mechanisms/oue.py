"""Optimized unary encoding: one noisy bit per option (Wang et al., USENIX Security 2017)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._validate import as_real, check_finite
from deniable.shared.mechanisms._base import ReportValueError
from deniable.shared.mechanisms._frequency_oracle import FrequencyOracle
from deniable.shared.mechanisms._options import as_option, as_options
from deniable.shared.mechanisms._oue_wire import decode_oue_bits, encode_oue_bits
from deniable.shared.mechanisms._parameters import check_epsilon, check_options, most_useful, times
from deniable.shared.sampling import bernoulli, source_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["OptimizedUnaryEncoding"]

_HALF = Fraction(1, 2)


def _oue_ratio(q: float) -> Fraction | None:
    if q <= 0:
        return None
    exact = Fraction(q)
    return (1 - exact) / exact


@dataclass(frozen=True)
class OptimizedUnaryEncoding(FrequencyOracle):
    """Optimized unary encoding (OUE): one bit per option is reported.

    The true option's bit is 1 with probability p* = 1/2 and every other bit with
    probability q*, independently; two inputs change two bits, so
    ε = ln(p*(1−q*)/((1−p*)q*)) = ln((1−q)/q) exactly. Optimal q = 1/(e^ε + 1). On the
    wire the k bits are packed least significant bit first into ceil(k/8) bytes.

    Attributes:
        k: number of options (and bits per report).
        q: probability that a bit other than the true option's is 1, 0 < q < 1/2.

    Example:
        >>> oue = OptimizedUnaryEncoding(k=3, q=0.25)
        >>> oue.p_star, oue.q_star, round(oue.epsilon, 4)
        (0.5, 0.25, 1.0986)
        >>> oue.perturb(1).shape
        (3,)
    """

    name: ClassVar[str] = "oue"
    title: ClassVar[str] = "optimized unary encoding"
    value_field: ClassVar[str] = "bits"
    one_option_per_report: ClassVar[bool] = False

    q: float

    def _check_parameters(self) -> None:
        value = check_finite("q", as_real("q", self.q))
        if not (0.0 < value < 0.5):
            raise ValueError(f"q must be strictly between 0 and 1/2, got {value!r}")
        object.__setattr__(self, "q", value)

    @classmethod
    def from_epsilon(cls, k: int, epsilon: float) -> OptimizedUnaryEncoding:
        """OUE over k options with the smallest q certified at ``epsilon``.

        q = 1/(e^ε + 1), moved by a few ulps so that it is certified, never above.
        """
        count, eps = check_options(k), check_epsilon(epsilon)
        tiny = math.exp(-eps)
        q = most_useful(tiny / (1.0 + tiny), eps, _oue_ratio, 0.5, 0.0)
        if q >= 0.5:
            raise ValueError(f"epsilon={eps!r} is too small to represent: q would be 1/2")
        return cls(count, q)

    @classmethod
    def from_question(cls, question: pb.Question) -> OptimizedUnaryEncoding:
        """OUE over the question's options with its ``oue.q``."""
        return cls(cls.options_of(question), question.mechanism.oue.q)

    @property
    def p_star_exact(self) -> Fraction:
        """1/2."""
        return _HALF

    @property
    def q_star_exact(self) -> Fraction:
        """The parameter q, exactly."""
        return Fraction(self.q)

    @property
    def privacy_ratio(self) -> Fraction | None:
        """(1−q)/q exactly."""
        return _oue_ratio(self.q)

    def parameters(self) -> dict[str, float]:
        """``q``."""
        return {"q": self.q}

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        return (
            f"Your report is one yes/no flag per option: your true choice's flag is set with "
            f"probability 50% and every other flag with probability {self.q:.0%}, so any "
            f"report is at most {times((1 - self.q) / self.q)} times as likely from one "
            f"choice as from another (epsilon = {self.epsilon:.2f})."
        )

    def perturb(
        self, value: int | np.integer[Any], rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """The k reported bits for one true option."""
        return self.perturb_many(as_option(value, self.k), rng)

    def perturb_many(
        self, truths: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Reported bits, shape ``truths.shape + (k,)``.

        The true option's bit is Bernoulli(1/2), every other bit Bernoulli(q), all
        independent and exact.
        """
        truth = as_options(truths, self.k, "values")
        source = source_for(rng)
        flat = truth.reshape(-1)
        bits = bernoulli(Fraction(self.q), flat.size * self.k, source).reshape(flat.size, self.k)
        bits[np.arange(flat.size), flat] = bernoulli(_HALF, flat.size, source)
        return bits.reshape((*truth.shape, self.k))

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"bits": packed}`` per report (a row of k booleans)."""
        rows = np.asarray(reports).reshape(-1, self.k)
        return [{"bits": encode_oue_bits(row)} for row in rows]

    def show_value(self, report: pb.Report) -> str:
        """``bits`` and the packed bits in hex."""
        return f"bits {report.bits.hex()}"

    def decode(self, values: Any) -> NDArray[np.bool_]:
        """Received packed bits as an (m, k) boolean array."""
        try:
            return decode_oue_bits(values, self.k)
        except ValueError as error:
            row, _, message = str(error).removeprefix("OUE report ").partition(" ")
            raise ReportValueError(int(row) if row.isdigit() else 0, "bits", message) from None

    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        """Column sums: how many reports set each option's bit."""
        return np.asarray(np.count_nonzero(np.asarray(reports), axis=0), dtype=np.int64)
