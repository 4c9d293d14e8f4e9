"""(n, ε)-closeness: is there a reference set M of at least n rows every class is close to?

M is any subset of the table's rows; only its sensitive counts m_s (0 ≤ m_s ≤ n_s) matter,
since each class L is compared with P_Q|M(s) = m_s / |M|. Variational and L1 are decided
exactly by an integer program; L2 and KL by exhaustive search over every m when that is
small, otherwise by bounds through the variational distance (an answer or "unknown").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator.central.closeness._audit import ClosenessReport, shares

__all__ = [
    "DENOMINATOR_LIMIT",
    "EXHAUSTIVE_LIMIT",
    "METHODS",
    "NCloseness",
    "n_closeness",
    "solve_l1",
]

EXHAUSTIVE_LIMIT = 200_000
"""L2 and KL search every count vector m when (vectors × classes) is at most this."""
DESCENT_STEPS = 20_000
"""At most so many trial sets in the local search of the L2 and KL bounds method."""

DENOMINATOR_LIMIT = 10**6
"""ε's largest denominator in the integer program (its coefficients stay exact in floats)."""

METHODS = {
    "milp": "integer program over the counts m_s (scipy's milp, HiGHS), exact",
    "exhaustive": "every count vector m checked, exact",
    "bounds": "integer programs under the variational distance: 'no' when even the bound "
    "D <= eps implies is infeasible (exact); 'yes' when one of their solutions, or a local "
    "search from the first, meets D <= eps (exact: the set is checked exactly); otherwise "
    "undecided",
}
"""What each ``method`` of an answer means."""


@dataclass(frozen=True)
class NCloseness:
    """The answer to (n, ε)-closeness, how it was reached, and a reference set if one exists."""

    n: int
    epsilon: Fraction
    answer: bool | None  # None: the method could not decide
    exact: bool
    method: str
    witness: tuple[int, ...] | None  # m_s per sensitive value
    distances: tuple[float, ...] | None  # each class's distance to the witness

    def to_dict(self, values: Sequence[str]) -> dict[str, Any]:
        """JSON-ready data; the witness as counts per sensitive value."""
        witness = None
        if self.witness is not None:
            witness = {
                "size": sum(self.witness),
                "counts": dict(zip(values, self.witness, strict=True)),
                "class_distances": list(self.distances or ()),
            }
        return {
            "n": self.n,
            "epsilon": str(self.epsilon),
            "answer": self.answer,
            "exact": self.exact,
            "method": self.method,
            "method_detail": METHODS[self.method],
            "witness": witness,
        }


def _fits(report: ClosenessReport, m: Sequence[int], epsilon: Fraction) -> bool:
    reference = shares(m)
    return all(
        report.distance.within(shares(group.counts), reference, epsilon) for group in report.classes
    )


def _distances(report: ClosenessReport, m: Sequence[int]) -> tuple[float, ...]:
    reference = shares(m)
    return tuple(report.distance.value(shares(g.counts), reference) for g in report.classes)


def solve_l1(
    classes: Sequence[Sequence[int]],
    totals: Sequence[int],
    n: int,
    bound: Fraction,
    positive: bool = False,
) -> tuple[int, ...] | None:
    """Counts m with n ≤ Σm, m_s ≤ totals_s and Σ_s|m_s − |M|·P_L(s)| ≤ bound·|M| for all L.

    An integer program with integer coefficients (each class's constraint multiplied by its
    size and by ε's denominator), so the solver's tolerances cannot admit a violation; it
    returns the largest such m, or None when none exists. ``positive`` asks m_s ≥ 1.
    """
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    if bound.denominator > DENOMINATOR_LIMIT:
        raise ValueError(f"bound {bound}: denominator above {DENOMINATOR_LIMIT:,}")
    k = len(totals)
    # Classes with the same distribution give the same constraints: keep one of each.
    distinct = list(dict.fromkeys(_reduced(counts) for counts in classes))
    size = k + len(distinct) * k  # m_s, then u_{L,s} = |L|·|m_s/|M| − P_L(s)|·|M|
    entries: list[tuple[int, int, float]] = []
    upper: list[float] = []
    row = 0
    for index, counts in enumerate(distinct):
        members = sum(counts)
        for s in range(k):
            for sign in (1, -1):  # ±(|L|·m_s − c_{L,s}·|M|) ≤ u_{L,s}
                entries.extend(
                    (row, r, sign * float((members if r == s else 0) - counts[s])) for r in range(k)
                )
                entries.append((row, k + index * k + s, -1.0))
                upper.append(0.0)
                row += 1
        entries.extend((row, r, float(-bound.numerator * members)) for r in range(k))
        entries.extend(
            (row, k + index * k + s, float(bound.denominator)) for s in range(k)
        )  # q·Σ_s u_{L,s} ≤ p·|L|·|M|
        upper.append(0.0)
        row += 1
    entries.extend((row, r, 1.0) for r in range(k))  # n ≤ |M|
    lower = [-np.inf] * row + [float(n)]
    upper.append(float(sum(totals)))
    rows, columns, values = zip(*entries, strict=True)
    matrix = coo_array((values, (rows, columns)), shape=(row + 1, size)).tocsr()
    low = [1.0 if positive else 0.0] * k + [0.0] * (size - k)
    high = [float(total) for total in totals] + [np.inf] * (size - k)
    result = milp(
        c=np.array([-1.0] * k + [0.0] * (size - k)),
        constraints=LinearConstraint(matrix, np.array(lower), np.array(upper)),
        integrality=np.ones(size),
        bounds=Bounds(np.array(low), np.array(high)),
    )
    if result.status == 2:  # infeasible
        return None
    if result.x is None:
        raise RuntimeError(f"the integer program did not finish: {result.message}")
    return tuple(round(value) for value in result.x[:k])


def _reduced(counts: Sequence[int]) -> tuple[int, ...]:
    """The counts divided by their greatest common divisor: one tuple per distribution."""
    divisor = math.gcd(*counts) or 1
    return tuple(count // divisor for count in counts)


def _exhaustive(report: ClosenessReport, n: int, epsilon: Fraction) -> NCloseness:
    best: tuple[int, ...] | None = None
    ranges = [range(total + 1) for total in report.counts]
    if n == report.rows:
        ranges = [range(total, total + 1) for total in report.counts]
    for m in itertools.product(*ranges):
        size = sum(m)
        if size >= max(n, 1) and (best is None or size > sum(best)) and _fits(report, m, epsilon):
            best = m
    return NCloseness(
        n,
        epsilon,
        best is not None,
        True,
        "exhaustive",
        best,
        None if best is None else _distances(report, best),
    )


def _upper(value: float) -> Fraction:
    """A fraction of denominator 10**6 above ``value`` (and above its float's rounding)."""
    return Fraction(math.floor(value * 10**6) + 2, 10**6)


def _lower(value: Fraction) -> Fraction:
    """A fraction of denominator 10**6 at most ``value``."""
    return Fraction(math.floor(value * 10**6), 10**6)


def _necessary_l1(report: ClosenessReport, epsilon: Fraction) -> Fraction:
    """An L1 bound every class must meet when D ≤ ε (L2: √k·ε; KL: Pinsker's inequality)."""
    if report.distance.name == "l2":
        bound = _upper(math.sqrt(len(report.counts)) * float(epsilon))
    else:  # KL in bits: L1 = 2·TV ≤ 2·sqrt(KL·ln2/2) = sqrt(2·ln2·KL)
        bound = _upper(math.sqrt(2 * math.log(2) * float(epsilon)))
    return min(bound, Fraction(2))


def _bounded(report: ClosenessReport, n: int, epsilon: Fraction) -> NCloseness:
    classes = [group.counts for group in report.classes]
    positive = report.distance.name == "kl"  # m_s = 0 with some P_L(s) > 0 is infinite KL
    necessary = _necessary_l1(report, epsilon)
    first = solve_l1(classes, report.counts, n, necessary, positive)
    method = "bounds"
    if first is None:
        return NCloseness(n, epsilon, False, True, method, None, None)
    candidates: list[tuple[int, ...] | None] = [first]
    if report.distance.name == "l2":
        candidates.append(solve_l1(classes, report.counts, n, epsilon, positive))  # L2 ≤ L1
    candidates.extend(
        solve_l1(classes, report.counts, n, _lower(necessary / 2**step), positive)
        for step in range(1, 9)
    )
    for m in candidates:
        if m is not None and _fits(report, m, epsilon):
            return NCloseness(n, epsilon, True, True, method, m, _distances(report, m))
    m = _descend(report, first, n)
    if _fits(report, m, epsilon):
        return NCloseness(n, epsilon, True, True, method, m, _distances(report, m))
    return NCloseness(n, epsilon, None, False, method, None, None)


def _descend(
    report: ClosenessReport, start: Sequence[int], n: int, evaluations: int = DESCENT_STEPS
) -> tuple[int, ...]:
    """Pattern search from ``start`` for the m with the smallest largest distance (floats).

    Adds step to one m_s, takes it from another, or both (keeping 0 ≤ m_s ≤ n_s and Σm ≥ n)
    while that lowers the largest class distance, halving the step when no move does; at
    most ``evaluations`` tries.
    """
    import numpy as np

    classes = np.array([group.counts for group in report.classes], dtype=float)
    classes /= classes.sum(axis=1, keepdims=True)
    totals = report.counts

    def worst(m: Any) -> float:
        q = m / m.sum()
        if report.distance.name == "l2":
            return float(np.sqrt(((classes - q) ** 2).sum(axis=1)).max())
        if np.any((classes > 0) & (q == 0)):
            return math.inf
        ratio = np.where(classes > 0, classes / np.where(q > 0, q, 1.0), 1.0)
        return float((classes * np.log2(ratio)).sum(axis=1).max())

    m = np.array(start, dtype=float)
    best = worst(m)
    step = max(max(totals) // 2, 1)
    while step >= 1 and evaluations > 0:
        improved = False
        for up, down in itertools.product(range(-1, len(totals)), repeat=2):
            if up == down:
                continue
            trial = m.copy()
            if up >= 0:
                trial[up] = min(trial[up] + step, totals[up])
            if down >= 0:
                trial[down] = max(trial[down] - step, 0)
            if np.array_equal(trial, m) or trial.sum() < n:
                continue
            evaluations -= 1
            value = worst(trial)
            if value < best:
                m, best, improved = trial, value, True
        if not improved:
            step //= 2
    return tuple(int(value) for value in m)


def n_closeness(
    report: ClosenessReport, n: int, epsilon: Fraction, limit: int = EXHAUSTIVE_LIMIT
) -> NCloseness:
    """Decide (n, ε)-closeness of the report's classes (see the module docstring)."""
    if not 1 <= n <= report.rows:
        raise ValueError(f"n must be in [1, {report.rows}] (the table's rows), got {n}")
    if epsilon.denominator > DENOMINATOR_LIMIT:
        raise ValueError(
            f"epsilon {epsilon} has too many digits for the exact search: give it with a "
            f"denominator up to {DENOMINATOR_LIMIT:,} (6 decimals, or a fraction such as 4/9)"
        )
    name = report.distance.name
    if name in ("variational", "l1"):
        bound = 2 * epsilon if name == "variational" else epsilon
        classes = [group.counts for group in report.classes]
        m = solve_l1(classes, report.counts, n, bound)
        if m is not None and not _fits(report, m, epsilon):
            raise RuntimeError(f"the integer program's counts {m} fail the exact check")
        distances = None if m is None else _distances(report, m)
        return NCloseness(n, epsilon, m is not None, True, "milp", m, distances)
    vectors = math.prod(total + 1 for total in report.counts)
    if vectors * len(report.classes) <= limit or n == report.rows:  # n = rows: M is the table
        return _exhaustive(report, n, epsilon)
    return _bounded(report, n, epsilon)
