"""Per kind of question: validating the spec, checking report values, tallies and estimates."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from operator import mul
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis._frequency import estimate_frequencies
from deniable.aggregator.analysis._mean import MeanTally, estimate_mean
from deniable.aggregator.analysis._proportion import estimate_proportion
from deniable.aggregator.analysis._support import (
    grr_support_counts,
    olh_support_counts,
    oue_support_counts,
)
from deniable.aggregator.storage import Selection, Tally
from deniable.aggregator.storage._decode import Group
from deniable.shared._categorical import GrrSpec, OlhSpec, OueSpec
from deniable.shared._categorical_wire import decode_oue_bits
from deniable.shared._frequency_oracle import MAX_OPTIONS, CategoricalSpec
from deniable.shared._numeric import DuchiSpec, HybridSpec, LaplaceSpec, PiecewiseSpec
from deniable.shared._rr import RandomizedResponseSpec
from deniable.shared._universal_hash import HASH_PRIME
from deniable.shared._wire import VALUE_FOR, Spec, describe_mechanism, question_kind, question_spec
from deniable.shared.errors import InvalidArgument, shown
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "MAX_NUMERIC_BOUND",
    "MAX_OPTION_TEXT",
    "MIN_SURVEY_EPSILON",
    "check_question",
    "check_survey_limits",
    "estimate",
    "group_tally",
]

MAX_OPTION_TEXT = 200
MIN_SURVEY_EPSILON = 1e-3
"""Smallest exact ε of a survey question's mechanism, for every kind of mechanism.

Far below any useful setting (an estimate's variance grows as 1/ε²: a yes/no share from n
reports at ε = 0.001 has a standard error of about 1000/√n) and far above where debiasing
in floating point breaks down: at ε >= 0.001 the gap p* − q* that every categorical and
yes/no estimate divides by is at least about ε/g >= 2e-13 (OLH's hash range g < 2^32), and
a Duchi report ±B is at most about 2/ε = 2000. The numeric library itself goes down to
ε = 2^-20 (``shared._numeric_base.MIN_EPSILON``); this floor is the aggregator's.
"""
MAX_NUMERIC_BOUND = 1e15
"""Largest magnitude of a numeric question's ``min`` and ``max``.

Every numeric report y (on the normalized [−1, 1] scale) has |y| < 2^117: Laplace clamps
at 2^52, Duchi's B is at most about 2000 at ε >= MIN_SURVEY_EPSILON, a Piecewise grid has
fewer than 2^52 cells of width at most 2^65. Tallies are exact integers, so over any
number of reports |ȳ| < 2^117 and s² < 2^235; a t-quantile is below 2^53 for every
confidence level < 1 (2^30 up to the service's 1 − 1e-9). With |min|, |max| <= 1e15 < 2^50
the mean and interval ends x = min + (max − min)(t + 1)/2 stay below 2^225 and the
worst-case variance below 2^335, all far inside the float range (2^1024). The bound is
human-scale (a quadrillion; whole numbers are exact below 2^53), far beyond any survey
answer.
"""
TallyFunction = Callable[[Selection], list[int]]


def check_question(question: pb.Question, where: str) -> tuple[Spec, pb.Privacy]:
    """Validate a question's kind and mechanism; its spec and privacy figures.

    Raises:
        InvalidArgument: naming the field under ``where``.
    """
    try:
        kind = question_kind(question)
    except ValueError as error:
        raise InvalidArgument(f"{where}.{error}") from None
    if kind == "categorical":
        _check_options(list(question.categorical.options), f"{where}.categorical.options")
    try:
        spec = question_spec(question)
    except ValueError as error:
        raise InvalidArgument(f"{where}.{error}") from None
    if not math.isfinite(spec.epsilon):
        raise InvalidArgument(
            f"{where}.mechanism: {describe_mechanism(question.mechanism)} gives no privacy "
            "(epsilon = inf)"
        )
    check_survey_limits(question, spec, where)
    approx = spec.epsilon_approx if isinstance(spec, RandomizedResponseSpec) else 0.0
    privacy = pb.Privacy(epsilon=spec.epsilon, epsilon_approx=approx, explanation=spec.explain())
    return spec, privacy


def check_survey_limits(question: pb.Question, spec: Spec, where: str) -> None:
    """Refuse ε below :data:`MIN_SURVEY_EPSILON` and a range beyond :data:`MAX_NUMERIC_BOUND`.

    ``spec`` is the question's valid mechanism; its exact ε is what is checked.

    Raises:
        InvalidArgument: naming the field under ``where`` and the value.
    """
    if spec.epsilon < MIN_SURVEY_EPSILON:
        raise InvalidArgument(
            f"{where}.mechanism: epsilon {spec.epsilon!r} of "
            f"{describe_mechanism(question.mechanism)} is below the minimum "
            f"{MIN_SURVEY_EPSILON!r} (an estimate's variance grows as 1/epsilon^2)"
        )
    if isinstance(spec, LaplaceSpec | DuchiSpec | PiecewiseSpec | HybridSpec):
        for field, value in (("min", spec.lo), ("max", spec.hi)):
            if abs(value) > MAX_NUMERIC_BOUND:
                raise InvalidArgument(
                    f"{where}.numeric.{field}: {value!r} is beyond ±{MAX_NUMERIC_BOUND:g}, "
                    "the largest magnitude of a numeric question's range"
                )


def _check_options(options: list[str], where: str) -> None:
    if not 2 <= len(options) <= MAX_OPTIONS:
        raise InvalidArgument(f"{where}: need 2..{MAX_OPTIONS} options, got {len(options)}")
    seen: set[str] = set()
    for index, option in enumerate(options):
        if not option.strip() or len(option) > MAX_OPTION_TEXT:
            raise InvalidArgument(f"{where}[{index}]: must be 1..{MAX_OPTION_TEXT} characters")
        if option in seen:
            raise InvalidArgument(f"{where}[{index}]: duplicate option {shown(option)}")
        seen.add(option)


def group_tally(spec: Spec, group: Group, positions: Sequence[int]) -> TallyFunction:
    """Check a group's values against its question's mechanism; the group's tally function.

    Raises:
        InvalidArgument: a value of the wrong kind or outside the mechanism's output
            domain, naming the report index and field.
    """
    mechanism = group.template.mechanism.WhichOneof("kind")
    assert mechanism is not None
    expected = VALUE_FOR[mechanism]
    where = f"reports[{group.first}]"
    if group.template.WhichOneof("value") != expected:
        raise InvalidArgument(f"{where}.{expected}: missing ({mechanism} reports carry {expected})")

    def bad(row: int, field: str, message: str) -> InvalidArgument:
        return InvalidArgument(f"reports[{positions[int(group.rows[row])]}].{field}: {message}")

    values: Any = group.values
    if isinstance(spec, RandomizedResponseSpec):
        return lambda keep: [int(np.count_nonzero(values[keep]))]
    if isinstance(spec, GrrSpec):
        out = np.flatnonzero(values >= spec.k)
        if out.size:
            raise bad(out[0], "option", f"{values[out[0]]} is not below k={spec.k}")
        return lambda keep: grr_support_counts(values[keep], spec.k).tolist()
    if isinstance(spec, OueSpec):
        try:
            bits = decode_oue_bits(values, spec.k)
        except ValueError as error:
            found = re.match(r"OUE report (\d+) (.*)", str(error))
            row, message = (int(found[1]), found[2]) if found else (0, str(error))
            raise bad(row, "bits", message) from None
        return lambda keep: oue_support_counts(bits[keep], spec.k).tolist()
    if isinstance(spec, OlhSpec):
        return _olh_tally(spec, values, bad)
    if not isinstance(spec, LaplaceSpec | DuchiSpec | PiecewiseSpec | HybridSpec):
        raise TypeError(f"no report check for {type(spec).__name__}")  # pragma: no cover
    numbers = np.asarray(values, dtype=np.float64)
    first = spec.validate_report(numbers)
    if first is not None:
        number = float(numbers[first])
        raise bad(first, "number", f"{number!r} is not a possible {spec.kind} report")
    units = np.ldexp(numbers, spec.unit_bits)

    def numeric(keep: Selection) -> list[int]:
        chosen = [int(v) for v in units[keep].tolist()]
        return [sum(chosen), sum(map(mul, chosen, chosen))]

    return numeric


def _olh_tally(
    spec: OlhSpec, values: NDArray[np.uint64], bad: Callable[[int, str, str], InvalidArgument]
) -> TallyFunction:
    for column, field, bound in ((0, "hashed.a", HASH_PRIME), (1, "hashed.b", HASH_PRIME)):
        out = np.flatnonzero(values[:, column] >= np.uint64(bound))
        if out.size:
            raise bad(out[0], field, f"{values[out[0], column]} is not below 2^61-1")
    out = np.flatnonzero(values[:, 2] >= np.uint64(spec.g))
    if out.size:
        raise bad(out[0], "hashed.value", f"{values[out[0], 2]} is not below g={spec.g}")
    return lambda keep: olh_support_counts(
        values[keep, 0], values[keep, 1], values[keep, 2], spec.k, spec.g
    ).tolist()


def estimate(
    question: pb.Question, spec: Spec, tally: Tally, confidence: float, method: str
) -> dict[str, Any]:
    """The Estimate message's fields for a question with reports (``tally.n`` >= 1)."""
    if isinstance(spec, RandomizedResponseSpec):
        result = estimate_proportion(tally.ones, tally.n, spec.alpha, confidence, method)
        return {**result.to_dict(), "mechanism": spec.kind}
    if isinstance(spec, CategoricalSpec):
        counts = np.asarray(tally.sums or [0] * spec.k, dtype=np.int64)
        freq = estimate_frequencies(counts, tally.n, spec, confidence, "population", method)
        options = [
            pb.OptionEstimate(
                option=name,
                estimate=freq.estimate[i],
                estimate_raw=freq.estimate_raw[i],
                ci_low=freq.ci_low[i],
                ci_high=freq.ci_high[i],
                std_error=freq.std_error[i],
                support=int(counts[i]),
            )
            for i, name in enumerate(question.categorical.options)
        ]
        return {
            "n": tally.n,
            "confidence": confidence,
            "method": method,
            "estimand": freq.estimand,
            "epsilon": spec.epsilon,
            "alpha": getattr(spec, "alpha", 0.0),
            "mechanism": spec.kind,
            "options": options,
        }
    assert isinstance(spec, LaplaceSpec | DuchiSpec | PiecewiseSpec | HybridSpec)
    total, squares = (*tally.sums, 0, 0)[:2]
    mean = estimate_mean(spec, MeanTally(spec.unit_bits, tally.n, total, squares), confidence)
    return {
        "n": tally.n,
        "estimate": mean.estimate,
        "estimate_raw": mean.estimate_raw,
        "ci_low": mean.ci_low,
        "ci_high": mean.ci_high,
        "std_error": mean.std_error,
        "std_error_worst": mean.std_error_worst,
        "confidence": confidence,
        "method": mean.method,
        "estimand": mean.estimand,
        "epsilon": spec.epsilon,
        "mechanism": spec.kind,
    }
