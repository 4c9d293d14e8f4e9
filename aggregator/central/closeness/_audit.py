"""ε-closeness of a generalized table: each class's sensitive distribution against the whole."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = [
    "DISTANCES",
    "ClassDistance",
    "ClosenessReport",
    "Measure",
    "Table",
    "check_epsilon",
    "closeness",
    "kl_bits",
    "l2_squared",
    "measure",
    "parse_epsilon",
    "read_table",
    "shares",
    "variational",
]

Distribution = Sequence[Fraction]


def variational(p: Distribution, q: Distribution) -> Fraction:
    """Variational (total variation) distance ½·Σ|p(s) − q(s)|, exact."""
    return sum((abs(a - b) for a, b in zip(p, q, strict=True)), Fraction(0)) / 2


def l2_squared(p: Distribution, q: Distribution) -> Fraction:
    """The square of the Euclidean (L2) distance Σ(p(s) − q(s))², exact."""
    return sum(((a - b) ** 2 for a, b in zip(p, q, strict=True)), Fraction(0))


def kl_bits(p: Distribution, q: Distribution) -> float:
    """Kullback-Leibler divergence Σ p(s)·log2(p(s)/q(s)) in bits.

    Terms with p(s) = 0 count 0 (0·log 0 = 0); a value with p(s) > 0 and q(s) = 0 makes
    the divergence infinite (no smoothing).
    """
    total = 0.0
    for a, b in zip(p, q, strict=True):
        if a == 0:
            continue
        if b == 0:
            return math.inf
        total += float(a) * math.log2(a / b)
    return max(total, 0.0)  # rounding may leave -1e-17 for equal distributions


@dataclass(frozen=True)
class Measure:
    """One distance: how to compute it, compare it with ε exactly, and its range of ε."""

    name: str
    largest: str  # the largest ε that means anything, as shown in errors
    formula: str

    def exact(self, p: Distribution, q: Distribution) -> Fraction | None:
        """The distance as a fraction, when it is rational for every input."""
        if self.name == "variational":
            return variational(p, q)
        if self.name == "l1":
            return 2 * variational(p, q)
        return None

    def value(self, p: Distribution, q: Distribution) -> float:
        """The distance as a float (inf for KL against a zero probability)."""
        exact = self.exact(p, q)
        if exact is not None:
            return float(exact)
        if self.name == "l2":
            return math.sqrt(l2_squared(p, q))
        return kl_bits(p, q)

    def within(self, p: Distribution, q: Distribution, epsilon: Fraction) -> bool:
        """D(p, q) ≤ ε: exact for variational, L1 and L2 (squared), float for KL."""
        exact = self.exact(p, q)
        if exact is not None:
            return exact <= epsilon
        if self.name == "l2":
            return l2_squared(p, q) <= epsilon * epsilon
        return kl_bits(p, q) <= float(epsilon)

    def allows(self, epsilon: Fraction) -> bool:
        """Whether ε lies in [0, largest distance] (KL: any finite ε ≥ 0)."""
        if epsilon < 0:
            return False
        if self.name == "variational":
            return epsilon <= 1
        if self.name == "l1":
            return epsilon <= 2
        if self.name == "l2":
            return epsilon * epsilon <= 2
        return True


DISTANCES = {
    "variational": Measure("variational", "1", "1/2 * sum_s |P_L(s) - P_Q(s)|"),
    "l1": Measure("l1", "2", "sum_s |P_L(s) - P_Q(s)| (twice the variational distance)"),
    "l2": Measure("l2", "sqrt(2)", "sqrt(sum_s (P_L(s) - P_Q(s))^2)"),
    "kl": Measure(
        "kl",
        "infinity",
        "sum_s P_L(s) * log2(P_L(s) / P_Q(s)) in bits; terms with P_L(s) = 0 count 0, "
        "and P_Q(s) = 0 < P_L(s) makes it infinite (no smoothing)",
    ),
}
"""The distances by name; L1 is twice the variational distance."""


def measure(name: str) -> Measure:
    """The distance called ``name``, or a ValueError naming it and the known ones."""
    try:
        return DISTANCES[name]
    except KeyError:
        known = ", ".join(DISTANCES)
        raise ValueError(f"unknown distance {name!r}; use one of {known}") from None


def parse_epsilon(text: str) -> Fraction:
    """ε as typed: a decimal (0.2, 1e-3) or a fraction (4/9), kept exact."""
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(
            f"epsilon {text!r} is not a number (write a decimal such as 0.2 or a fraction "
            "such as 4/9)"
        ) from None
    return value


def check_epsilon(epsilon: Fraction, distance: Measure) -> Fraction:
    """ε itself, or a ValueError when it lies outside the distance's range."""
    if not distance.allows(epsilon):
        raise ValueError(
            f"epsilon must be in [0, {distance.largest}] for the {distance.name} distance, "
            f"got {epsilon}"
        )
    return epsilon


@dataclass(frozen=True)
class Table:
    """A CSV table: its header and its rows, every value a string as written."""

    path: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def index(self, column: str, role: str) -> int:
        """The position of ``column``, or a ValueError naming it and the columns there are."""
        if column not in self.columns:
            known = ", ".join(repr(name) for name in self.columns)
            raise ValueError(f"{role} column {column!r} is not in {self.path} (columns: {known})")
        return self.columns.index(column)


def read_table(path: str | Path) -> Table:
    """Read a UTF-8 CSV file with a header row; a ValueError names the file and the fault."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"{name}: cannot read ({error.strerror})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{name}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None
    if "\0" in text:
        raise ValueError(f"{name}: not a text file (it holds NUL characters)")
    try:
        records = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as error:
        raise ValueError(f"{name}: not valid CSV ({error})") from None
    if not records:
        raise ValueError(f"{name}: empty file (no header row)")
    header = tuple(records[0])
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:
        raise ValueError(f"{name}: column {repeated[0]!r} appears twice in the header")
    for number, row in enumerate(records[1:], start=2):
        if len(row) != len(header):
            raise ValueError(
                f"{name}: record {number} has {len(row)} fields, the header {len(header)}"
            )
    return Table(name, header, tuple(tuple(row) for row in records[1:]))


@dataclass(frozen=True)
class ClassDistance:
    """One equivalence class: its quasi-identifier values, counts and distance to the whole."""

    quasi: tuple[str, ...]
    counts: tuple[int, ...]  # per sensitive value, in the report's order
    distance: float
    exact: Fraction | None

    @property
    def size(self) -> int:
        """The number of rows in the class."""
        return sum(self.counts)


@dataclass(frozen=True)
class ClosenessReport:
    """Every class's distance D(P_L, P_Q) and, given ε, whether the table is ε-close."""

    path: str
    sensitive: str
    quasi: tuple[str, ...]
    distance: Measure
    values: tuple[str, ...]  # sensitive values, in order of first appearance
    counts: tuple[int, ...]
    classes: tuple[ClassDistance, ...]
    epsilon: Fraction | None

    @property
    def rows(self) -> int:
        """The number of rows of the table."""
        return sum(self.counts)

    @property
    def largest(self) -> ClassDistance:
        """The class farthest from the whole table (the first of them on a tie)."""
        return max(self.classes, key=lambda group: group.distance)

    def within(self, group: ClassDistance) -> bool | None:
        """Whether the class is within ε (None without ε)."""
        if self.epsilon is None:
            return None
        return self.distance.within(shares(group.counts), shares(self.counts), self.epsilon)

    @property
    def close(self) -> bool | None:
        """Whether every class is within ε (None without ε)."""
        if self.epsilon is None:
            return None
        return all(self.within(group) for group in self.classes)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (fractions as strings such as "4/9")."""
        largest = self.largest
        return {
            "data": self.path,
            "rows": self.rows,
            "sensitive": self.sensitive,
            "quasi": list(self.quasi),
            "distance": self.distance.name,
            "distance_formula": self.distance.formula,
            "values": [
                {"value": value, "count": count, "share": str(Fraction(count, self.rows))}
                for value, count in zip(self.values, self.counts, strict=True)
            ],
            "classes": [
                {
                    "quasi": dict(zip(self.quasi, group.quasi, strict=True)),
                    "size": group.size,
                    "counts": dict(zip(self.values, group.counts, strict=True)),
                    "distance": group.distance,
                    "distance_exact": _text(group.exact),
                    "within_epsilon": self.within(group),
                }
                for group in self.classes
            ],
            "max_distance": largest.distance,
            "max_distance_exact": _text(largest.exact),
            "max_distance_class": dict(zip(self.quasi, largest.quasi, strict=True)),
            "epsilon": _text(self.epsilon),
            "epsilon_close": self.close,
        }


def shares(counts: Sequence[int]) -> tuple[Fraction, ...]:
    """The distribution of counts, exact (all zero counts: all zero shares)."""
    total = sum(counts)
    return tuple(Fraction(count, total) if total else Fraction(0) for count in counts)


def _text(value: Fraction | None) -> str | None:
    return None if value is None else str(value)


def closeness(
    table: Table,
    sensitive: str,
    quasi: Sequence[str],
    distance: Measure,
    epsilon: Fraction | None = None,
) -> ClosenessReport:
    """Group the rows by their quasi-identifier values and measure each group's distance."""
    if not quasi:
        raise ValueError("name at least one quasi-identifier column")
    if len(set(quasi)) != len(quasi):
        raise ValueError(f"quasi-identifier columns repeat: {', '.join(quasi)}")
    if sensitive in quasi:
        raise ValueError(f"column {sensitive!r} cannot be both sensitive and quasi-identifier")
    where = table.index(sensitive, "sensitive")
    keys = [table.index(column, "quasi-identifier") for column in quasi]
    if not table.rows:
        raise ValueError(f"{table.path}: the table has no rows (only a header)")
    if epsilon is not None:
        check_epsilon(epsilon, distance)
    values = tuple(dict.fromkeys(row[where] for row in table.rows))
    position = {value: index for index, value in enumerate(values)}
    groups: dict[tuple[str, ...], list[int]] = {}
    for row in table.rows:
        counts = groups.setdefault(tuple(row[key] for key in keys), [0] * len(values))
        counts[position[row[where]]] += 1
    totals = [0] * len(values)
    for counts in groups.values():
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
    whole = shares(totals)
    classes = tuple(
        ClassDistance(
            key,
            tuple(counts),
            distance.value(shares(counts), whole),
            distance.exact(shares(counts), whole),
        )
        for key, counts in groups.items()
    )
    return ClosenessReport(
        table.path, sensitive, tuple(quasi), distance, values, tuple(totals), classes, epsilon
    )
