"""Per-item randomized response for multi-select questions: each of k indicator bits flipped."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared._exact import tightest_epsilon
from deniable.shared._validate import as_count, as_real, check_finite
from deniable.shared.mechanisms._base import Estimate, Mechanism, ReportValueError, Tally
from deniable.shared.mechanisms._item_estimate import (
    ConditionalShare,
    MultiSelectEstimate,
    estimate_conditional,
    estimate_multi_select,
    flip_rates,
)
from deniable.shared.mechanisms._oue_wire import decode_oue_bits, encode_oue_bits
from deniable.shared.mechanisms._parameters import check_epsilon, most_useful, times
from deniable.shared.sampling import bernoulli, source_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_ITEMS", "ItemRandomizedResponse", "as_item_sets", "check_items"]

MAX_ITEMS = 64
"""Most items a multi-select question may have.

Each item gets ε/k, so the noise per item grows with k (the variance of an item's share is
about e^(ε/k)/(e^(ε/k) − 1)² per participant: at ε = 2 and k = 64, about 1000 times that
of k = 1); the tally holds k(k−1)/2 pair counts; a true answer is one 64-bit mask.
"""


def check_items(k: object) -> int:
    """Return ``k`` if it is an integer number of items in [2, 64], else raise naming it."""
    count = as_count("k", k)
    if not (2 <= count <= MAX_ITEMS):
        raise ValueError(f"k must be between 2 and {MAX_ITEMS} items, got {count}")
    return count


def as_item_sets(values: ArrayLike, k: int, name: str = "values") -> NDArray[np.bool_]:
    """True answers as indicator rows: integer masks (bit i: item i chosen) in [0, 2^k).

    Returns a boolean array of shape ``values.shape + (k,)``; names the first bad mask.
    """
    array = np.asarray(values)
    if array.dtype.kind in "fO" and not isinstance(values, np.ndarray):
        # Python integers beside masks of 2^63 and above: numpy would make floats of them.
        objects = np.asarray(values, dtype=object)
        if objects.size and all(type(value) is int for value in objects.flat):
            for index, value in np.ndenumerate(objects):
                if not 0 <= value < 1 << k:
                    where = f" at index {tuple(map(int, index))}" if objects.ndim else ""
                    raise ValueError(
                        f"{name} must be item-set masks in [0, 2^{k}), got {value!r}{where}"
                    )
            array = np.asarray(objects, dtype=np.uint64)
    if array.size == 0 and array.dtype.kind not in "b":
        return np.zeros((*array.shape, k), dtype=bool)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be item-set masks (integers), got dtype {array.dtype}")
    bad = np.flatnonzero(array < 0) if array.dtype.kind == "i" else np.zeros(0, dtype=np.int64)
    if not bad.size and k < 64:
        bad = np.flatnonzero(array.astype(np.uint64) >> np.uint64(k))
    if bad.size:
        index = np.unravel_index(bad[0], array.shape)
        where = f" at index {tuple(map(int, index))}" if array.ndim else ""
        raise ValueError(
            f"{name} must be item-set masks in [0, 2^{k}), got {array[index].item()!r}{where}"
        )
    masks = array.astype(np.uint64)[..., None]
    shifts = np.arange(k, dtype=np.uint64)
    return ((masks >> shifts) & np.uint64(1)).astype(bool)


def _flip_ratio(q: float) -> Fraction | None:
    """(1−q)/q: one bit's worst-case likelihood ratio."""
    if q <= 0:
        return None
    exact = Fraction(q)
    return (1 - exact) / exact


@dataclass(frozen=True)
class ItemRandomizedResponse(Mechanism):
    """Per-item randomized response: every item's chosen/not-chosen bit flipped w.p. q.

    A participant's answer is a set of the k items (any subset, the empty set included),
    written as its k indicator bits. Each bit is reported flipped with probability q and
    as it is with probability 1 − q, independently and exactly. Two answers differ in at
    most k bits, and a report's likelihood is the product over its bits, so the worst-case
    ratio is ((1−q)/q)^k exactly: ε = k·ln((1−q)/q), the sum of the k bits' ε/k (basic
    composition, which is tight here: two complementary sets reach it). ``from_epsilon``
    splits ε evenly, q = 1/(e^(ε/k) + 1).

    Debiasing d_i = (y_i − q)/(1 − 2q) gives E[d_i] = x_i, and, the noise being
    independent across bits, E[d_i·d_j] = x_i·x_j for i ≠ j: item shares and pairwise
    co-occurrences are both unbiased from the tally (k item counts, then k(k−1)/2 pair
    counts of reports with both bits set, pairs (0,1), (0,2), …, (k−2,k−1)).

    Attributes:
        k: number of items, 2..64.
        q: flip probability of each bit, 0 < q < 1/2.

    Example:
        >>> rr = ItemRandomizedResponse(k=2, q=0.25)
        >>> rr.privacy_ratio, round(rr.epsilon, 4), round(rr.epsilon_per_item, 4)
        (Fraction(9, 1), 2.1972, 1.0986)
        >>> rr.perturb(0b10).shape
        (2,)
    """

    name: ClassVar[str] = "item_rr"
    title: ClassVar[str] = "per-item randomized response"
    question_type: ClassVar[str] = "multi_select"
    value_field: ClassVar[str] = "bits"

    k: int
    q: float
    _gap: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_items(self.k))
        value = check_finite("q", as_real("q", self.q))
        if not (0.0 < value < 0.5):
            raise ValueError(f"q must be strictly between 0 and 1/2, got {value!r}")
        object.__setattr__(self, "q", value)
        object.__setattr__(self, "_gap", 1.0 - 2.0 * value)
        self._set_epsilon()

    @classmethod
    def from_epsilon(cls, k: int, epsilon: float) -> ItemRandomizedResponse:
        """K items at total ``epsilon``, split evenly: the smallest q certified at it.

        q = 1/(e^(ε/k) + 1), moved by a few ulps so that ((1−q)/q)^k <= e^ε exactly.
        """
        count, eps = check_items(k), check_epsilon(epsilon)
        tiny = math.exp(-eps / count)

        def ratio(q: float) -> Fraction | None:
            one = _flip_ratio(q)
            return None if one is None else one**count

        q = most_useful(tiny / (1.0 + tiny), eps, ratio, 0.5, 0.0)
        if q >= 0.5:
            raise ValueError(f"epsilon={eps!r} is too small to represent: q would be 1/2")
        return cls(count, q)

    @classmethod
    def from_question(cls, question: pb.Question) -> ItemRandomizedResponse:
        """The question's items with its ``item_rr.q``."""
        return cls(len(question.multi_select.items), question.mechanism.item_rr.q)

    # --- privacy --------------------------------------------------------------------------

    @property
    def item_ratio(self) -> Fraction:
        """(1−q)/q exactly: one bit's worst-case likelihood ratio."""
        ratio = _flip_ratio(self.q)
        assert ratio is not None  # q > 0
        return ratio

    @property
    def privacy_ratio(self) -> Fraction | None:
        """((1−q)/q)^k exactly: the ratio when every bit differs."""
        return self.item_ratio**self.k

    @property
    def epsilon_per_item(self) -> float:
        """ε of one item's bit, ln((1−q)/q) rounded up (about ε/k)."""
        return tightest_epsilon(self.item_ratio)

    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""
        return (
            f"Your report is one yes/no flag per item ({self.k} items): each flag is your "
            f"true choice with probability {1 - self.q:.0%} and flipped with probability "
            f"{self.q:.0%}, independently, so any report is at most "
            f"{times(float(self.item_ratio))} times as likely whether or not you chose one "
            f"item, and at most {times(float(self.item_ratio) ** self.k)} times as likely "
            f"from one set of choices as from any other (epsilon = {self.epsilon:.2f} in "
            f"total, {self.epsilon_per_item:.2f} per item)."
        )

    def describe(self) -> dict[str, Any]:
        """The parameters and privacy figures as a JSON-ready dict."""
        return {
            "mechanism": self.name,
            "k": self.k,
            "q": self.q,
            "epsilon": self.epsilon,
            "epsilon_per_item": self.epsilon_per_item,
            "private": self.is_private,
        }

    def parameters(self) -> dict[str, float]:
        """``q``."""
        return {"q": self.q}

    # --- the participant's side -----------------------------------------------------------

    def perturb(
        self, value: int | np.integer[Any], rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """The k reported bits for one true set (an integer mask)."""
        array = np.asarray(value)
        if array.ndim != 0:
            raise ValueError(
                f"value must be a single set, got shape {array.shape}; use perturb_many"
            )
        return self.perturb_many(array, rng)

    def perturb_many(
        self, truths: ArrayLike, rng: np.random.Generator | None = None
    ) -> NDArray[np.bool_]:
        """Reported bits, shape ``truths.shape + (k,)``: each true bit XOR Bernoulli(q)."""
        truth = as_item_sets(truths, self.k)
        flips = bernoulli(Fraction(self.q), truth.size, source_for(rng)).reshape(truth.shape)
        return np.asarray(truth ^ flips, dtype=bool)

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """``{"bits": packed}`` per report (k bits, the OUE layout)."""
        rows = np.asarray(reports).reshape(-1, self.k)
        return [{"bits": encode_oue_bits(row)} for row in rows]

    def show_value(self, report: pb.Report) -> str:
        """``bits`` and the packed bits in hex."""
        return f"bits {report.bits.hex()}"

    # --- the aggregator's side ------------------------------------------------------------

    def decode(self, values: Any) -> NDArray[np.bool_]:
        """Received packed bits as an (m, k) boolean array."""
        try:
            return decode_oue_bits(values, self.k)
        except ValueError as error:
            row, _, message = str(error).removeprefix("OUE report ").partition(" ")
            raise ReportValueError(int(row) if row.isdigit() else 0, "bits", message) from None

    def tally(self, reports: Any) -> list[int]:
        """K item counts, then the k(k−1)/2 pair counts (i < j, row by row)."""
        bits = np.asarray(reports, dtype=np.int64).reshape(-1, self.k)
        together = bits.T @ bits
        upper = np.triu_indices(self.k, 1)
        return [int(c) for c in np.diagonal(together).tolist() + together[upper].tolist()]

    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> Estimate:
        """Item shares and pairwise co-occurrences (:func:`estimate_multi_select`)."""
        return self.estimate_items(
            tally, confidence, method, simultaneous=simultaneous, anytime=anytime
        )

    def estimate_items(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> MultiSelectEstimate:
        """The typed estimate: item shares and the co-occurrence matrix."""
        return estimate_multi_select(
            self, tally, confidence, method, simultaneous=simultaneous, anytime=anytime
        )

    def conditional(
        self, tally: Tally, given: int, item: int, confidence: float = 0.95
    ) -> ConditionalShare:
        """Among those who chose ``given``, the share who chose ``item`` (delta method)."""
        return estimate_conditional(self, tally, given, item, confidence)

    # --- planning -------------------------------------------------------------------------

    @property
    def bit_variance(self) -> float:
        """V = q(1−q)/(1−2q)²: the variance of one debiased bit, whatever the truth."""
        return flip_rates(self)[2]

    @property
    def gap(self) -> float:
        """1 − 2q: how much a chosen item raises its bit's chance of being reported."""
        return self._gap

    def estimate_variance(self, n: int, share: float | None = None) -> float:
        """Var of an item's share from n participants: (v + f(1−f))/n, worst f = 1/2."""
        count = as_count("n", n, minimum=1)
        f = 0.5 if share is None else float(share)
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {share!r}")
        return (self.bit_variance + f * (1.0 - f)) / count

    def pair_variance(self, n: int) -> float:
        """Worst-case Var of a pair's co-occurrence from n participants (for planning).

        Var = [v² + v(f_i + f_j) + f_ij(1 − f_ij)]/n, at its largest over shares that some
        population has (f_ij <= f_i, f_j and f_i + f_j − f_ij <= 1): on f_i + f_j = 1 + f_ij
        it is v² + v(1 + f_ij) + f_ij(1 − f_ij), largest at f_ij = min((1 + v)/2, 1).
        """
        count = as_count("n", n, minimum=1)
        v = self.bit_variance
        both = min((1.0 + v) / 2.0, 1.0)
        return (v * v + v * (1.0 + both) + both * (1.0 - both)) / count
