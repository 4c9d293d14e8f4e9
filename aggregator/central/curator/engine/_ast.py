"""A validated condition's tree and its rendering as DuckDB or PostgreSQL SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from deniable.aggregator.central.curator._base import CuratorError

__all__ = [
    "DIALECTS",
    "KINDS",
    "LIKE_ESCAPE",
    "Between",
    "BoolOp",
    "Col",
    "Compare",
    "InList",
    "IsNull",
    "Like",
    "Lit",
    "Node",
    "Not",
    "Scalar",
    "check_dialect",
    "quote_identifier",
    "render",
    "render_literal",
]

KINDS = ("int", "float", "str", "bool")
"""The column kinds queries can use; an engine names any other SQL type as it is."""

DIALECTS = ("duckdb", "postgres")
LIKE_ESCAPE = "\\"
"""Both engines get LIKE ... ESCAPE '\\': PostgreSQL's default, which DuckDB lacks."""

Literal: TypeAlias = int | float | str | bool | None


@dataclass(frozen=True)
class Col:
    """A column of the source, by its exact name, with its kind."""

    name: str
    kind: str


@dataclass(frozen=True)
class Lit:
    """A literal: an int (64-bit), a finite float, a str, a bool, or None (NULL)."""

    value: Literal

    @property
    def kind(self) -> str:
        """The literal's kind: one of KINDS, or 'null'."""
        value = self.value
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "bool"
        return {int: "int", float: "float", str: "str"}[type(value)]


Scalar: TypeAlias = Col | Lit


@dataclass(frozen=True)
class Compare:
    """``left op right`` with op one of = <> < <= > >=."""

    op: str
    left: Scalar
    right: Scalar


@dataclass(frozen=True)
class BoolOp:
    """``left AND right`` or ``left OR right``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    """``NOT operand``."""

    operand: Node


@dataclass(frozen=True)
class InList:
    """``operand IN (values...)``: a non-empty list of literals of one kind, none NULL."""

    operand: Scalar
    values: tuple[Lit, ...]


@dataclass(frozen=True)
class Between:
    """``operand BETWEEN low AND high`` (both bounds included)."""

    operand: Scalar
    low: Scalar
    high: Scalar


@dataclass(frozen=True)
class Like:
    """``operand LIKE pattern`` (ILIKE when insensitive), backslash escaping % and _."""

    operand: Scalar
    pattern: str
    insensitive: bool = False


@dataclass(frozen=True)
class IsNull:
    """``operand IS NULL``."""

    operand: Scalar


Node: TypeAlias = Col | Lit | Compare | BoolOp | Not | InList | Between | Like | IsNull


def check_dialect(dialect: str) -> str:
    """``dialect`` if it is one the engines speak, else a CuratorError naming it."""
    if dialect not in DIALECTS:
        raise CuratorError(f"unknown SQL dialect {dialect!r}: expected one of {DIALECTS}")
    return dialect


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted identifier (a double quote doubled), in both dialects."""
    return '"' + name.replace('"', '""') + '"'


def render_literal(value: Literal, dialect: str) -> str:
    """A literal as SQL: floats as explicit doubles so both engines compare in binary64."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        double = "DOUBLE" if dialect == "duckdb" else "DOUBLE PRECISION"
        return f"CAST('{value!r}' AS {double})"
    return "'" + value.replace("'", "''") + "'"


def render(node: Node, dialect: str) -> str:
    """The node as SQL of ``dialect``; every compound is parenthesized."""
    if isinstance(node, Col):
        return quote_identifier(node.name)
    if isinstance(node, Lit):
        return render_literal(node.value, dialect)
    if isinstance(node, Compare):
        return f"({render(node.left, dialect)} {node.op} {render(node.right, dialect)})"
    if isinstance(node, BoolOp):
        return f"({render(node.left, dialect)} {node.op} {render(node.right, dialect)})"
    if isinstance(node, Not):
        return f"(NOT {render(node.operand, dialect)})"
    if isinstance(node, InList):
        values = ", ".join(render(value, dialect) for value in node.values)
        return f"({render(node.operand, dialect)} IN ({values}))"
    if isinstance(node, Between):
        operand, low, high = (render(n, dialect) for n in (node.operand, node.low, node.high))
        return f"({operand} BETWEEN {low} AND {high})"
    if isinstance(node, Like):
        word = "ILIKE" if node.insensitive else "LIKE"
        pattern = render_literal(node.pattern, dialect)
        escape = render_literal(LIKE_ESCAPE, dialect)
        return f"({render(node.operand, dialect)} {word} {pattern} ESCAPE {escape})"
    return f"({render(node.operand, dialect)} IS NULL)"
