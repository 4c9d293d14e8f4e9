"""What every curator layer shares: its error, a cell's value, neighbours and the privacy unit."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NEIGHBOURS", "CuratorError", "PrivacyUnit", "Value", "check_neighbours"]

Value = int | float | str | None
"""A cell: an int or float of a numeric column, a str, or None (a missing cell)."""

NEIGHBOURS = ("add-remove", "replace")
"""add-remove: neighbours differ by one unit added or removed; replace: by one unit changed."""


class CuratorError(ValueError):
    """Bad input to a curator query (source, column, type, option): the message names it."""


def check_neighbours(neighbours: str) -> str:
    """``neighbours`` if it is add-remove or replace, else an error naming the option."""
    if neighbours not in NEIGHBOURS:
        raise CuratorError(f"--neighbours must be add-remove or replace, got {neighbours!r}")
    return neighbours


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: neighbouring data sets differ in all rows of one unit.

    Attributes:
        column: the column naming each row's unit (a person's id); None: each row is a unit.
        max_contributions: K, the most rows of one unit any query uses (chosen uniformly at
            random with the OS CSPRNG when a unit has more); 1 when each row is a unit.
    """

    column: str | None = None
    max_contributions: int = 1

    def __post_init__(self) -> None:
        k = self.max_contributions
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CuratorError(f"--max-contributions must be an integer >= 1, got {k!r}")
        if self.column is None and k != 1:
            raise CuratorError(
                "--max-contributions needs --privacy-unit (without it each row is a unit)"
            )
        if self.column is not None and not self.column:
            raise CuratorError("--privacy-unit: give a column name")

    @property
    def rows_are_units(self) -> bool:
        """True when each row is its own unit (no --privacy-unit)."""
        return self.column is None

    def describe(self) -> str:
        """One sentence for outputs: who a neighbouring data set differs by."""
        if self.column is None:
            return (
                "each row is a privacy unit (no --privacy-unit): a person with k rows "
                "is protected at k·ε"
            )
        return (
            f"privacy unit {self.column!r}: all rows of one unit, at most "
            f"{self.max_contributions} of them used per query"
        )
