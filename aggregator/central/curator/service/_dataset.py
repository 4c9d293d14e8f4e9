"""The served data set: its registered name, engine, privacy unit and neighbour notion."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit, check_neighbours
from deniable.aggregator.central.curator.engine import Condition, Engine, parse_condition

__all__ = ["Dataset", "Description"]


class Description(TypedDict):
    """A data set's public facts (``curate describe``)."""

    dataset: str
    columns: dict[str, str]
    privacy_unit: str | None
    max_contributions: int
    neighbours: str
    unit_description: str
    rows: int | None


@dataclass
class Dataset:
    """One data set as the custodian registered it.

    Attributes:
        name: the registered name its budget is kept under (not the file, not its bytes).
        engine: the query engine over its source.
        unit: who is protected (neighbouring data sets differ in all rows of one unit).
        neighbours: add-remove (a unit added or removed) or replace (a unit changed).
    """

    name: str
    engine: Engine
    unit: PrivacyUnit
    neighbours: str
    _facts: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_neighbours(self.neighbours)
        if self.unit.column is not None:
            self.column(self.unit.column, "--privacy-unit")

    def column(self, name: str, option: str) -> str:
        """The kind of column ``name`` (int, float, str, bool), else an error naming it."""
        kinds = self.engine.columns
        if name not in kinds:
            raise CuratorError(
                f"{option}: no column {name!r} in {self.name} (columns: {', '.join(kinds)})"
            )
        return kinds[name]

    def condition(self, where: str | None) -> Condition | None:
        """The validated ``--where`` condition (None for all rows)."""
        return parse_condition(where, self.engine.columns) if where else None

    def public_rows(self) -> int | None:
        """The row count when it is public: replace-one with each row a unit; else None."""
        if self.neighbours != "replace" or not self.unit.rows_are_units:
            return None
        if "rows" not in self._facts:
            self._facts["rows"] = self.engine.row_count()
        return self._facts["rows"]

    def count_upper(self, max_rows: int | None) -> int | None:
        """The public upper clamp of a count: N rows, K·(number of units), or ``max_rows``.

        Under replace-one the number of units is public, and a count bounded to K rows
        per unit is at most K times it. Under add-remove only a bound the analyst states.
        """
        if self.neighbours == "replace":
            if self.unit.rows_are_units:
                return self.public_rows()
            if "units" not in self._facts:
                self._facts["units"] = self.engine.unit_count(self.unit)
            return self._facts["units"] * self.unit.max_contributions
        return max_rows

    def describe(self) -> Description:
        """The public facts an analyst may read: nothing here depends on a person's data."""
        return {
            "dataset": self.name,
            "columns": dict(self.engine.columns),
            "privacy_unit": self.unit.column,
            "max_contributions": self.unit.max_contributions,
            "neighbours": self.neighbours,
            "unit_description": self.unit.describe(),
            "rows": self.public_rows(),
        }
