"""Optimized local hashing: a random universal hash, then GRR over its g values."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple

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
from deniable.shared.mechanisms._universal_hash import (
    HASH_MAX_RANGE,
    HASH_PRIME,
    check_hash_range,
    hash_unchecked,
)
from deniable.shared.sampling import source_for, uniform_below
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["CHUNK_ELEMENTS", "OlhReport", "OlhReports", "OptimizedLocalHashing"]

CHUNK_ELEMENTS = 1 << 16
"""Hashes evaluated at once when counting support (bounds memory to a few MB per batch)."""


class OlhReport(NamedTuple):
    """One OLH report: hash parameters a, b in [0, 2^61 − 1) and a value y in [0, g)."""

    a: int
    b: int
    y: int


@dataclass(frozen=True)
class OlhReports:
    """Many OLH reports as parallel arrays a, b (uint64) and y (int64) of one shape.

    Indexing with a mask or slice selects reports; ``a, b, y = reports`` unpacks the arrays.
    """

    a: NDArray[np.uint64]
    b: NDArray[np.uint64]
    y: NDArray[np.int64]

    def __iter__(self) -> Iterator[Any]:
        return iter((self.a, self.b, self.y))

    def __len__(self) -> int:
        return int(np.size(self.y))

    def __getitem__(self, index: Any) -> OlhReports:
        return OlhReports(self.a[index], self.b[index], self.y[index])


@dataclass(frozen=True)
class OptimizedLocalHashing(FrequencyOracle):
    """Optimized local hashing (OLH): a random universal hash, then GRR (α form) over g values.

    The participant draws a, b uniformly from [0, P), P = 2^61 − 1, hashes the true option x
    to H(x) = ((a·x + b) mod P) mod g and reports (a, b, y), where y is H(x) with
    probability α and otherwise uniform over [0, g). A report supports v when H(v) = y.
    p* = α + (1−α)/g exactly; for v ≠ x, H(v) is independent of H(x) and within 1/P of
    uniform, so q* = 1/g is off by at most 2^−61 (negligible). ε = ln(1 + gα/(1−α))
    exactly, whatever the hash.

    Attributes:
        k: number of options.
        g: hash range, 2 <= g <= 2^32 − 1; optimal g = round(e^ε) + 1.
        alpha: probability of keeping the hashed value, 0 < α <= 1 (α = 1: no privacy).

    Example:
        >>> olh = OptimizedLocalHashing(k=100, g=4, alpha=0.5)
        >>> olh.p_star, olh.q_star, round(olh.epsilon, 4)
        (0.625, 0.25, 1.6094)
        >>> olh.perturb(42).y in range(4)
        True
    """

    name: ClassVar[str] = "olh"
    title: ClassVar[str] = "optimized local hashing"
    value_field: ClassVar[str] = "hashed"
    one_option_per_report: ClassVar[bool] = False
    also_answers: ClassVar[tuple[str, ...]] = ()
    """Not joint questions: their marginals and correlations need the covariance of two
    cells' estimates, and two cells' supports in one OLH report are correlated through
    collisions of the hash of three values (measured: for 4 cells at ε = 2, g = 8, the
    covariance is about 0, not −f_u f_v/n), which depend on the hash family. OUE, which
    ``auto`` picks in its place, has the same variance."""

    g: int
    alpha: float

    def _check_parameters(self) -> None:
        object.__setattr__(self, "g", check_hash_range(self.g))
        object.__setattr__(self, "alpha", check_alpha(self.alpha))

    @classmethod
    def from_epsilon(cls, k: int, epsilon: float) -> OptimizedLocalHashing:
        """OLH over k options with g = round(e^ε) + 1 and the largest α certified.

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
        return cls(count, g, alpha)

    @classmethod
    def from_question(cls, question: pb.Question) -> OptimizedLocalHashing:
        """OLH over the question's options with its ``olh.g`` and ``olh.alpha``."""
        olh = question.mechanism.olh
        return cls(cls.options_of(question), olh.g, olh.alpha)

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

    def parameters(self) -> dict[str, float]:
        """``g`` and ``alpha``."""
        return {"g": self.g, "alpha": self.alpha}

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

    def perturb(
        self, value: int | np.integer[Any], rng: np.random.Generator | None = None
    ) -> OlhReport:
        """The report (a, b, y) for one true option."""
        a, b, y = self.perturb_many(as_option(value, self.k), rng)
        return OlhReport(int(a), int(b), int(y))

    def perturb_many(self, truths: ArrayLike, rng: np.random.Generator | None = None) -> OlhReports:
        """Reports (a, b, y), each array shaped like ``truths``.

        a and b are exactly uniform on [0, P) (rejection from 61-bit words), and y is
        H_{a,b}(value) with probability α exactly, else exactly uniform on [0, g).
        """
        truth = as_options(truths, self.k, "values")
        source = source_for(rng)
        a = uniform_below(HASH_PRIME, truth.size, source)
        b = uniform_below(HASH_PRIME, truth.size, source)
        hashed = hash_unchecked(a, b, truth.reshape(-1).astype(np.uint64), self.g)
        y = randomized_response(hashed.astype(np.int64), self.g, self.alpha, source)
        return OlhReports(a.reshape(truth.shape), b.reshape(truth.shape), y.reshape(truth.shape))

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"hashed": HashedOption(a, b, value_fixed)}`` per report, 25 bytes each.

        a, b and value_fixed are fixed-width and set explicitly, so present even when 0.
        Older clients sent ``value``, a varint omitted at 0 and longer from 128 on, which
        told anyone who sees message sizes something about the reported hash value.
        """
        a, b, y = reports
        return [
            {"hashed": pb.HashedOption(a=int(ai), b=int(bi), value_fixed=int(yi))}
            for ai, bi, yi in zip(
                np.ravel(a).tolist(), np.ravel(b).tolist(), np.ravel(y).tolist(), strict=True
            )
        ]

    @staticmethod
    def _hash_value(report: pb.Report) -> int:
        hashed = report.hashed
        return hashed.value_fixed if hashed.HasField("value_fixed") else hashed.value

    def show_value(self, report: pb.Report) -> str:
        """``hash value y`` (a and b are random and say nothing)."""
        return f"hash value {self._hash_value(report)}"

    def summary_value(self, report: pb.Report) -> Any:
        """``{"a": ..., "b": ..., "value": ...}``."""
        return {"a": report.hashed.a, "b": report.hashed.b, "value": self._hash_value(report)}

    def decode(self, values: Any) -> OlhReports:
        """Received (a, b, value) rows, with a, b below 2^61 − 1 and value below g."""
        rows = np.asarray(values, dtype=np.uint64).reshape(-1, 3)
        check_below(rows[:, 0], HASH_PRIME, "hashed.a", "2^61-1")
        check_below(rows[:, 1], HASH_PRIME, "hashed.b", "2^61-1")
        check_below(rows[:, 2], self.g, "hashed.value", f"g={self.g}")
        return OlhReports(rows[:, 0], rows[:, 1], rows[:, 2].astype(np.int64))

    def join(self, parts: Sequence[Any]) -> OlhReports | None:
        """Several groups of reports as one (their a, b and y columns joined)."""
        if not all(isinstance(part, OlhReports) for part in parts):
            return None
        return OlhReports(
            np.concatenate([part.a for part in parts]),
            np.concatenate([part.b for part in parts]),
            np.concatenate([part.y for part in parts]),
        )

    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        """C_v = #{i : H_{a_i,b_i}(v) = y_i}, every report hashed at every option.

        ``CHUNK_ELEMENTS`` hashes at a time, so memory stays bounded for any batch.
        """
        a, b, y = (np.ravel(column).astype(np.uint64) for column in reports)
        options = np.arange(self.k, dtype=np.uint64)[None, :]
        rows = max(1, CHUNK_ELEMENTS // self.k)
        total = np.zeros(self.k, dtype=np.int64)
        for start in range(0, a.size, rows):
            part = slice(start, start + rows)
            hashed = hash_unchecked(a[part, None], b[part, None], options, self.g)
            total += np.count_nonzero(hashed == y[part, None], axis=0)
        return total
