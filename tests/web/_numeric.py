"""The Python side of the numeric conformance tests: replayed bytes, crafted rare events, laws."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToDict

from deniable.client._answer import build_report, check_mechanism, parse_answer
from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    Mechanism,
    NumericMechanism,
    PiecewiseMechanism,
)
from deniable.shared.mechanisms._numeric_sampling import exact_positions
from deniable.shared.sampling._bernoulli import _threshold_words
from deniable.shared.sampling._discrete_laplace import laplace_plan
from deniable.shared.sampling._exp_digits import leading_bits
from deniable.shared.sampling._uniform import candidates
from deniable.shared.wire.v1 import aggregator_pb2 as pb

QUESTION_ID = "q1"


class ReplayBytes(np.random.Generator):
    """A test generator whose ``bytes`` replays given data, recording every read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(np.random.PCG64(0))
        self.data = data
        self.reads: list[tuple[int, int]] = []  # (offset, size)

    @property
    def used(self) -> int:
        return sum(size for _, size in self.reads)

    def bytes(self, length: int) -> bytes:
        offset = self.used
        chunk = self.data[offset : offset + length]
        assert len(chunk) == length, "the replayed bytes ran out"
        self.reads.append((offset, length))
        return chunk


def question(mechanism: NumericMechanism) -> pb.Question:
    """A numeric question on the mechanism's range, carrying the mechanism."""
    return pb.Question(
        id=QUESTION_ID,
        numeric=pb.NumericQuestion(min=mechanism.lo, max=mechanism.hi),
        mechanism=mechanism.to_message(),
    )


def as_json(message: pb.Question) -> dict[str, Any]:
    """A question as the page takes it (proto3 JSON)."""
    return MessageToDict(message)


_checked: dict[bytes, Mechanism] = {}


def python_report(
    message: pb.Question, truth: str, data: bytes
) -> tuple[dict[str, Any], ReplayBytes]:
    """The Python client's report of ``truth`` from these bytes, and the reads it made.

    The client checks the question's mechanism (once per question here), then builds the
    report: its id first, then the mechanism's draws.
    """
    key = message.SerializeToString(deterministic=True)
    if key not in _checked:
        _checked[key] = check_mechanism(message)
    mechanism = _checked[key]
    replay = ReplayBytes(data)
    prepared = build_report("", message, mechanism, parse_answer(truth, message), replay)
    return MessageToDict(prepared.report), replay


def word(value: int) -> bytes:
    """A 64-bit word as the rational Bernoulli reads it (little-endian)."""
    return value.to_bytes(8, "little")


def tie(numerator: int, denominator: int) -> bytes:
    """The word equal to the first base-2^64 digit of numerator/denominator: a tie."""
    return word((numerator << 64) // denominator)


def geometric_bytes(gamma: Fraction, count: int) -> bytes:
    """Bytes making ``geometric_exp(gamma)`` draw ``count``: CKS outcomes forced word by word.

    A factor e^(−1) is True when Bernoulli(1/2) succeeds (word 0) and Bernoulli(1/3) fails
    (all ones); e^(−part) when Bernoulli(part) fails at once. A draw fails at its first
    factor: Bernoulli(1/2) failing, or for γ < 1 Bernoulli(part) then Bernoulli(part/2).
    """
    whole, part = divmod(gamma, 1)
    ones, zeros = b"\xff" * 8, b"\x00" * 8
    success = (zeros + ones) * int(whole) + (ones if part else b"")
    failure = ones if whole else zeros + ones
    return success * count + failure


@dataclass(frozen=True)
class Craft:
    """A random stream changed to force a rare branch: bytes put at offsets from reads."""

    what: str
    patches: tuple[tuple[int, int, bytes], ...]  # (read of the clean run, offset in it, bytes)
    reads_more: bool  # the branch reads more bytes than the clean run

    def apply(self, data: bytes, reads: list[tuple[int, int]]) -> bytes:
        """The stream with the patches put where the clean run made those reads."""
        for index, offset, value in self.patches:
            at = reads[index][0] + offset
            data = data[:at] + value + data[at + len(value) :]
        return data


def _rejected(cells: int) -> bytes:
    """A round of candidates all rejected by ``uniform_below(cells)`` (cells not a power of 2)."""
    width = next(w for w in (1, 2, 4, 8) if (cells - 1).bit_length() <= 8 * w)
    return b"\xff" * (width * candidates(cells))


def crafts(mechanism: NumericMechanism, truth: float) -> list[Craft]:
    """Streams that force the rare branches Python documents, for one mechanism and truth."""
    (n,), den = exact_positions([truth], mechanism.lo, mechanism.hi)
    found: list[Craft] = []

    def tie_at(index: int, numerator: int, denominator: int, what: str) -> None:
        more = (numerator << 64) % denominator != 0  # p's expansion goes on: a tie reads on
        found.append(Craft(what, ((index, 0, tie(numerator, denominator)),), more))

    if isinstance(mechanism, LaplaceMechanism):
        tie_at(1, n * (1 << mechanism.grid_bits) % den, den, "rounding tie")
        plan = laplace_plan(mechanism.noise_scale_exact)
        rows = plan.bits + 2
        after = 16 * rows + 1  # the first byte after the noise's block (and its sign byte)
        for row in (0, 1, plan.bits, rows - 1):
            shape, x = plan.shapes[row], plan.arguments[row]
            threshold = leading_bits(shape, x, 128).to_bytes(16, "big")
            following = (leading_bits(shape, x, 192) & ((1 << 64) - 1)).to_bytes(8, "big")
            found.append(Craft(f"row {row} tie", ((2, 16 * row, threshold),), True))
            double = ((2, 16 * row, threshold), (2, after, following))
            found.append(Craft(f"row {row} double tie", double, True))
        for count in (0, 1, 2):
            geometric = geometric_bytes(plan.arguments[-1], count)
            tail = ((2, 0, b"\xff" * 16), (2, 16 * (rows - 1), bytes(16)), (2, after, geometric))
            found.append(Craft(f"|Z| > 2^J, geometric {count}", tail, True))
    elif isinstance(mechanism, DuchiMechanism):
        b, scale = Fraction(mechanism.bound).as_integer_ratio()
        tie_at(1, b * den + scale * (2 * n - den), 2 * b * den, "bernoulli tie")
    else:
        hybrid = mechanism if isinstance(mechanism, HybridMechanism) else None
        pm = hybrid.piecewise if hybrid else mechanism
        assert isinstance(pm, PiecewiseMechanism)
        mixed = hybrid is not None and 0 < hybrid.beta < 1
        start = 2 if mixed else 1  # the rounding's read: after the id (and the part's draw)
        tie_at(start, n * pm.outer_cells % den, den, "rounding tie")
        p = pm.p_center_exact
        tie_at(start + 1, p.numerator, p.denominator, "centre tie")
        index = start + 2
        for name, cells in (("centre", pm.center_cells), ("outer", pm.outer_cells)):
            if cells > 1:
                if cells & (cells - 1):
                    found.append(Craft(f"{name} rejected", ((index, 0, _rejected(cells)),), True))
                index += 1
        if hybrid is not None:
            b, scale = Fraction(hybrid.bound).as_integer_ratio()
            tie_at(index, b * den + scale * (2 * n - den), 2 * b * den, "duchi tie")
            if mixed:
                width, words = _threshold_words(Fraction(hybrid.beta))
                size = width * len(words)
                found.append(Craft("piecewise part", ((1, 0, bytes(size)),), False))
                found.append(Craft("duchi part", ((1, 0, b"\xff" * size),), False))
    return found


# --- exact laws -----------------------------------------------------------------------------


def merge_small(edges: Sequence[int], expected: Sequence[float], least: float = 5.0) -> list[int]:
    """Merge neighbouring bins (given by their first index) until each expects >= ``least``."""
    kept: list[int] = []
    total = 0.0
    for edge, count in zip(edges, expected, strict=True):
        if not kept or total >= least:
            kept.append(edge)
            total = 0.0
        total += count
    if total < least and len(kept) > 1:
        kept.pop()
    return kept


def laplace_cdf(epsilon: float, grid_bits: int, fraction: Fraction) -> Callable[[int], Decimal]:
    """P(J + Z − j0 <= d): rounding up with probability ``fraction``, Z discrete Laplace."""
    context = Context(prec=50)
    q = context.exp(-Decimal(epsilon) / (1 << grid_bits))
    f = Decimal(fraction.numerator) / Decimal(fraction.denominator)

    def laplace(k: int) -> Decimal:  # P(Z <= k) = 1 − q^(k+1)/(1+q) (k >= 0), q^(−k)/(1+q)
        if k >= 0:
            return 1 - context.power(q, k + 1) / (1 + q)
        return context.power(q, -k) / (1 + q)

    return lambda d: (1 - f) * laplace(d) + f * laplace(d - 1)


def chi_square(observed: Sequence[int], probabilities: Sequence[float]) -> tuple[float, int]:
    """Pearson's statistic and its degrees of freedom (bins − 1)."""
    total = sum(observed)
    assert math.isclose(sum(probabilities), 1.0, rel_tol=1e-12)
    statistic = sum(
        (o - total * p) ** 2 / (total * p) for o, p in zip(observed, probabilities, strict=True)
    )
    return statistic, len(observed) - 1
