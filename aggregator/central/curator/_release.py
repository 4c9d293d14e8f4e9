"""Non-interactive curator: one noisy contingency table, then queries on it at no privacy cost."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from deniable.aggregator.central.curator._base import (
    CuratorError,
    PrivacyUnit,
    Value,
    check_neighbours,
)
from deniable.aggregator.central.curator._noise import (
    check_confidence,
    check_curator_epsilon,
    discrete_half_width,
    noise_scale,
    noisy_integer,
)
from deniable.aggregator.central.curator._sensitivity import histogram_sensitivity, privacy_fields
from deniable.shared.sampling import ByteSource, os_source

__all__ = [
    "FORMAT",
    "Constraints",
    "Release",
    "ReleaseColumn",
    "ReleasedAnswer",
    "make_release",
    "read_release",
    "release_from_document",
]

FORMAT = "deniable-curator-release/2"
FORMAT_ROWS = "deniable-curator-release/1"
"""The first format: no privacy unit, each row a unit (read as such)."""

Constraints = Mapping[str, Sequence[Value]]
"""What a release answers: a conjunction over released columns, each ``column IN (values)``.

``{"dept": ["HR"], "remote": ["yes", "no"]}`` is ``dept = 'HR' AND remote IN ('yes',
'no')``; a column not named is unconstrained; None or {} keeps every cell.
"""


class ReleaseColumn(NamedTuple):
    """A released column: its name, type (int, float or str) and public list of values."""

    name: str
    kind: str
    values: tuple[Value, ...]


BONFERRONI = (
    "each of the m cells summed within its exact discrete Laplace bound at 1 − α/m "
    "(union bound), so the answer is within Σ|weight|·k of the released cells' true values"
)


@dataclass(frozen=True)
class Release:
    """A published contingency table: the listed values of each column and a noisy count per cell.

    Attributes:
        columns: (name, type, listed values) per column.
        cells: each combination of values (one per column, in order) and its released count.
        epsilon: the ε the release spent, once.
        neighbours: add-remove or replace.
        sensitivity: L1 Δ of the table (K or 2K).
        scale: the noise scale Δ/ε.
        upper: the clamp's upper end (None: clamped at 0 only).
        unit: the privacy unit (its column and K).
    """

    columns: tuple[ReleaseColumn, ...]
    cells: tuple[tuple[tuple[Value, ...], int], ...]
    epsilon: float
    neighbours: str
    sensitivity: int
    scale: Fraction
    upper: int | None
    unit: PrivacyUnit

    @property
    def types(self) -> dict[str, str]:
        """Each released column's type."""
        return {name: kind for name, kind, _ in self.columns}

    def to_dict(self) -> dict[str, Any]:
        """The release file's JSON document."""
        return {
            "format": FORMAT,
            "epsilon": self.epsilon,
            "delta": 0.0,
            **privacy_fields(self.neighbours, self.unit),
            "sensitivity": self.sensitivity,
            "noise_scale": [self.scale.numerator, self.scale.denominator],
            "clamp": [0, self.upper],
            "columns": [
                {"name": name, "type": kind, "values": list(values)}
                for name, kind, values in self.columns
            ],
            "cells": [{"values": list(values), "count": count} for values, count in self.cells],
            "note": "rows with a value not listed are in no cell",
        }

    def _keeps(self, constraints: Constraints | None) -> list[tuple[int, frozenset[Value]]]:
        """(column index, allowed values) per constrained column; a bad one is named."""
        names = [column.name for column in self.columns]
        kept = []
        for column, values in sorted((constraints or {}).items()):
            if column not in names:
                raise CuratorError(
                    f"--where: column {column!r} is not in the release (its columns: "
                    f"{', '.join(names)})"
                )
            if isinstance(values, str) or not values:
                raise CuratorError(f"--where: give a list of values for column {column!r}")
            kept.append((names.index(column), frozenset(values)))
        return kept

    def answer(
        self,
        constraints: Constraints | None,
        confidence: float,
        weight_column: str | None = None,
    ) -> ReleasedAnswer:
        """Σ count (or Σ value·count of ``weight_column``) over the cells the constraints keep.

        ``constraints`` is a conjunction of ``column IN (values)`` over released columns
        (:data:`Constraints`); answering spends nothing (post-processing of the release).
        """
        level = check_confidence(confidence)
        kept = self._keeps(constraints)
        names = [column.name for column in self.columns]
        chosen = [
            (values, count)
            for values, count in self.cells
            if all(values[index] in allowed for index, allowed in kept)
        ]
        if weight_column is None:
            weights = [1.0] * len(chosen)
        else:
            self.numeric(weight_column)
            index = names.index(weight_column)
            weights = [float(values[index]) for values, _ in chosen]  # type: ignore[arg-type]
        m = len(chosen)
        k = discrete_half_width(self.scale, 1 - (1 - level) / m) if m else 0
        value = sum(w * count for w, (_, count) in zip(weights, chosen, strict=True))
        spread = k * sum(abs(w) for w in weights)
        return ReleasedAnswer(
            value, value - spread, value + spread, m, k, level, self.neighbours, self.unit
        )

    def numeric(self, column: str) -> None:
        """Raise unless ``column`` is released with numeric values (for a sum or a mean)."""
        kind = self.types.get(column)
        if kind is None:
            raise CuratorError(
                f"--column: {column!r} is not in the release (its columns: {', '.join(self.types)})"
            )
        if kind == "str":
            raise CuratorError(
                f"--column: {column!r} is released as str values; a sum or mean needs numbers"
            )


@dataclass(frozen=True)
class ReleasedAnswer:
    """A sum over released cells: its value and the interval covering the true one."""

    value: float
    low: float
    high: float
    cells: int
    half_width: int
    confidence: float
    neighbours: str
    unit: PrivacyUnit

    def interval(self, low: float, high: float) -> dict[str, Any]:
        """The interval (clamped to [low, high] by the caller), as JSON."""
        return {
            "low": low,
            "high": high,
            "confidence": self.confidence,
            "cells": self.cells,
            "half_width_per_cell": self.half_width,
            "method": BONFERRONI,
            "covers": "the same sum over the true cells, each unit bounded to K rows",
        }

    def to_dict(self) -> dict[str, Any]:
        """The answer as JSON: no ε spent (the release's noise is reused)."""
        return {
            "released": self.value,
            "epsilon": 0.0,
            "delta": 0.0,
            "spent": "nothing: post-processing of the release",
            **privacy_fields(self.neighbours, self.unit),
            "interval": self.interval(self.low, self.high),
        }


def make_release(
    cells: Mapping[tuple[Value, ...], int],
    columns: Sequence[tuple[str, str, Sequence[Value]]],
    epsilon: float | Fraction,
    neighbours: str,
    unit: PrivacyUnit,
    *,
    upper: int | None = None,
    source: ByteSource = os_source,
) -> Release:
    """Add discrete Laplace noise of scale Δ/ε to every combination of the listed values.

    Args:
        cells: the exact bounded count (at most K rows per unit) of each combination of
            values, one per column in order; a missing combination counts 0, and one with a
            value not listed is in no cell (its count is ignored).
        columns: (name, type, public list of values) of each released column.
        epsilon: the privacy loss, spent once for the whole table.
        neighbours: add-remove or replace.
        unit: the privacy unit: the table is one histogram, L1 Δ = K or 2K.
        upper: a public clamp for every cell (None: clamped at 0 only).
        source: random bytes (the OS CSPRNG unless a seeded source is given for tests).
    """
    eps = check_curator_epsilon(epsilon)
    check_neighbours(neighbours)
    described = tuple(
        ReleaseColumn(str(name), str(kind), tuple(values)) for name, kind, values in columns
    )
    if not described:
        raise CuratorError("--columns: name at least one column to release")
    for column in described:
        if not column.values or len(set(column.values)) != len(column.values):
            raise CuratorError(
                f"--values: list the values of {column.name!r} once each, got {column.values!r}"
            )
    sensitivity = histogram_sensitivity(neighbours, unit)
    scale = noise_scale(eps, sensitivity)
    released = []
    for combination in itertools.product(*(column.values for column in described)):
        count = cells.get(combination, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise CuratorError(f"the count of {combination!r} must be an integer >= 0")
        # A count above ``upper`` (a --max-rows stated too low) is clamped, not refused:
        # a refusal would tell the count.
        noisy, *_ = noisy_integer(count, scale, 0, upper, 0.5, source)
        released.append((tuple(combination), noisy))
    return Release(described, tuple(released), eps, neighbours, sensitivity, scale, upper, unit)


def _unit(document: Mapping[str, Any]) -> PrivacyUnit:
    """The release's privacy unit: each row one in the first format."""
    if document["format"] == FORMAT_ROWS:
        return PrivacyUnit()
    unit = document["privacy_unit"]
    column = unit["column"]
    return PrivacyUnit(None if column is None else str(column), int(unit["max_contributions"]))


def read_release(path: Path) -> Release:
    """Load a release file written by ``curate release``; a file that is not one is an error."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CuratorError(f"--from-release: cannot read {path} ({error})") from None
    return release_from_document(document, str(path))


def release_from_document(document: Mapping[str, Any], name: str) -> Release:
    """A release from its JSON document (a file's, or one the custodian stored)."""
    try:
        if document["format"] not in (FORMAT, FORMAT_ROWS):
            raise CuratorError(f"--from-release: {name} is not a {FORMAT} document")
        columns = tuple(
            ReleaseColumn(str(c["name"]), str(c["type"]), tuple(c["values"]))
            for c in document["columns"]
        )
        cells = tuple((tuple(c["values"]), int(c["count"])) for c in document["cells"])
        numerator, denominator = document["noise_scale"]
        upper = document["clamp"][1]
        return Release(
            columns,
            cells,
            float(document["epsilon"]),
            check_neighbours(str(document["neighbours"])),
            int(document["sensitivity"]),
            Fraction(int(numerator), int(denominator)),
            None if upper is None else int(upper),
            _unit(document),
        )
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        if isinstance(error, CuratorError):
            raise
        raise CuratorError(f"--from-release: {name} is not a valid release ({error!r})") from None
