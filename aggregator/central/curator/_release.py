"""Non-interactive curator: one noisy contingency table, then queries on it at no privacy cost."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from deniable.aggregator.central.curator._noise import (
    check_confidence,
    check_curator_epsilon,
    discrete_half_width,
    noise_scale,
    noisy_integer,
)
from deniable.aggregator.central.curator._queries import count_upper, histogram_sensitivity
from deniable.aggregator.central.curator._table import CuratorError, Table
from deniable.aggregator.central.curator._where import Condition, Value
from deniable.shared.sampling import ByteSource, os_source

__all__ = ["FORMAT", "Release", "ReleasedAnswer", "make_release", "read_release"]

FORMAT = "deniable-curator-release/1"
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
        sensitivity: Δ of the table (1 or 2).
        scale: the noise scale Δ/ε.
        upper: the clamp's upper end (None: clamped at 0 only).
    """

    columns: tuple[tuple[str, str, tuple[Value, ...]], ...]
    cells: tuple[tuple[tuple[Value, ...], int], ...]
    epsilon: float
    neighbours: str
    sensitivity: int
    scale: Fraction
    upper: int | None

    @property
    def types(self) -> dict[str, str]:
        """Each released column's type."""
        return {name: kind for name, kind, _ in self.columns}

    def to_dict(self) -> dict[str, Any]:
        """The release file's JSON document."""
        return {
            "format": FORMAT,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
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

    def answer(
        self,
        condition: Condition | None,
        confidence: float,
        weight_column: str | None = None,
    ) -> ReleasedAnswer:
        """Σ count (or Σ value·count of ``weight_column``) over the cells the condition keeps."""
        level = check_confidence(confidence)
        if condition is not None:
            for column in sorted(condition.columns()):
                if column not in self.types:
                    raise CuratorError(
                        f"--where: column {column!r} is not in the release (its columns: "
                        f"{', '.join(self.types)})"
                    )
        names = [name for name, _, _ in self.columns]
        chosen = [
            (values, count)
            for values, count in self.cells
            if condition is None or condition.evaluate(dict(zip(names, values, strict=True)))
        ]
        if weight_column is None:
            weights = [1.0] * len(chosen)
        else:
            index = names.index(weight_column)
            weights = [float(values[index]) for values, _ in chosen]  # type: ignore[arg-type]
        m = len(chosen)
        k = discrete_half_width(self.scale, 1 - (1 - level) / m) if m else 0
        value = sum(w * count for w, (_, count) in zip(weights, chosen, strict=True))
        spread = k * sum(abs(w) for w in weights)
        return ReleasedAnswer(value, value - spread, value + spread, m, k, level)

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

    def interval(self, low: float, high: float) -> dict[str, Any]:
        """The interval (clamped to [low, high] by the caller), as JSON."""
        return {
            "low": low,
            "high": high,
            "confidence": self.confidence,
            "cells": self.cells,
            "half_width_per_cell": self.half_width,
            "method": BONFERRONI,
        }


def make_release(
    table: Table,
    columns: Sequence[str],
    values: Mapping[str, Sequence[Value]],
    epsilon: float,
    neighbours: str,
    *,
    max_rows: int | None = None,
    source: ByteSource = os_source,
) -> Release:
    """Count every combination of the listed values and add discrete Laplace noise of scale Δ/ε.

    The table is one histogram over the product of the listed values: Δ = 1 (add/remove) or
    2 (replace-one), so the whole table costs ε once. Each cell is clamped to [0, upper].
    """
    eps = check_curator_epsilon(epsilon)
    sensitivity = histogram_sensitivity(neighbours)
    scale = noise_scale(eps, sensitivity)
    upper = count_upper(table, neighbours, max_rows)
    types = {name: table.column(name, "--columns") for name in columns}
    counts = Counter(tuple(row[name] for name in columns) for row in table.rows)
    cells = []
    for combination in itertools.product(*(values[name] for name in columns)):
        released, *_ = noisy_integer(counts[combination], scale, 0, upper, 0.5, source)
        cells.append((tuple(combination), released))
    described = tuple((name, types[name], tuple(values[name])) for name in columns)
    return Release(described, tuple(cells), eps, neighbours, sensitivity, scale, upper)


def read_release(path: Path) -> Release:
    """Load a release file written by ``curate release``; a file that is not one is an error."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CuratorError(f"--from-release: cannot read {path} ({error})") from None
    try:
        if document["format"] != FORMAT:
            raise CuratorError(f"--from-release: {path} is not a {FORMAT} file")
        columns = tuple(
            (str(c["name"]), str(c["type"]), tuple(c["values"])) for c in document["columns"]
        )
        cells = tuple((tuple(c["values"]), int(c["count"])) for c in document["cells"])
        numerator, denominator = document["noise_scale"]
        upper = document["clamp"][1]
        return Release(
            columns,
            cells,
            float(document["epsilon"]),
            str(document["neighbours"]),
            int(document["sensitivity"]),
            Fraction(int(numerator), int(denominator)),
            None if upper is None else int(upper),
        )
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        if isinstance(error, CuratorError):
            raise
        raise CuratorError(f"--from-release: {path} is not a valid release ({error!r})") from None
