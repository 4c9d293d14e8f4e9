"""Conditions and group keys: parsed with sqlglot, checked against an allow-list and typed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokenizer_core import TokenType

from deniable.aggregator.central.curator._base import CuratorError, Value
from deniable.aggregator.central.curator.engine._ast import (
    BoolOp,
    Col,
    Compare,
    IsNull,
    Lit,
    Node,
    check_dialect,
    quote_identifier,
    render,
)
from deniable.aggregator.central.curator.engine._check import Checker, ConditionError

__all__ = [
    "ALLOWED",
    "Condition",
    "ConditionError",
    "Key",
    "and_",
    "equals",
    "literal_for",
    "parse_condition",
    "parse_key",
]

ALLOWED = "only columns, literals, comparisons, AND/OR/NOT, IN, BETWEEN, LIKE, IS NULL"
MAX_LENGTH = 10_000
"""The longest condition accepted (deeply nested ones are refused by depth, see _check)."""
MAX_PARENS = 32
"""The deepest nesting of parentheses accepted (sqlglot's parser recurses on each)."""


@dataclass(frozen=True)
class Condition:
    """A validated, type-checked boolean condition over a source's columns.

    Attributes:
        node: the validated tree (engine._ast); only allow-listed constructs.
        text: the condition as the analyst wrote it (or as a helper built it).
    """

    node: Node
    text: str

    def sql(self, dialect: str) -> str:
        """The condition as SQL of ``dialect`` ('duckdb' or 'postgres'), identifiers quoted."""
        return render(self.node, check_dialect(dialect))

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Key:
    """A group key: one column of kind int, str or bool."""

    column: str
    kind: str

    def sql(self, dialect: str) -> str:
        """The key as SQL of ``dialect``: the quoted column name."""
        check_dialect(dialect)
        return quote_identifier(self.column)

    def __str__(self) -> str:
        return self.column


def _tokens_checked(text: str, option: str) -> None:
    """Refuse comments and a second statement before parsing (they hide text from a reader)."""
    try:
        tokens = Dialect.get_or_raise("duckdb").tokenize(text)
    except Exception as error:  # sqlglot's TokenError, or anything a fuzzed input provokes
        raise ConditionError(f"{option}: cannot read {text!r}: {error}") from None
    depth = 0
    for token in tokens:
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth > MAX_PARENS:
            raise ConditionError(f"{option}: nested deeper than {MAX_PARENS} parentheses")
        if token.comments:
            raise ConditionError(
                f"{option}: comment {token.comments[0].strip()!r} is not allowed ({ALLOWED})"
            )
        if token.token_type == TokenType.SEMICOLON:
            raise ConditionError(
                f"{option}: ';' at position {token.start} is not allowed: one expression, "
                f"not statements ({ALLOWED})"
            )


def _parse(text: str, option: str) -> exp.Expression:
    """The sqlglot tree of one expression; any failure is a ConditionError naming where."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError(f"{option}: empty condition")
    if len(text) > MAX_LENGTH:
        raise ConditionError(f"{option}: longer than {MAX_LENGTH} characters")
    _tokens_checked(text, option)
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError as error:
        first: dict[str, Any] = error.errors[0] if error.errors else {}
        where = f" at column {first['col']} near {first['highlight']!r}" if "col" in first else ""
        description = first.get("description", str(error).splitlines()[0])
        raise ConditionError(f"{option}: cannot parse {text!r}{where}: {description}") from None
    except Exception as error:  # RecursionError, or anything else a fuzzed input provokes
        raise ConditionError(f"{option}: cannot parse {text!r}: {type(error).__name__}") from None
    if not isinstance(tree, exp.Expression):
        raise ConditionError(f"{option}: empty condition")
    return tree


def parse_condition(text: str, columns: Mapping[str, str], option: str = "--where") -> Condition:
    """``text`` as a Condition over ``columns`` (name -> kind), or a ConditionError.

    Allowed: column references (quoted or not), literals (numbers, strings, TRUE/FALSE,
    NULL in IS NULL), comparisons = <> != < <= > >=, AND/OR/NOT, parentheses, IN (a list of
    literals), BETWEEN, LIKE/ILIKE (str columns, backslash escapes), IS [NOT] NULL. The
    types are checked so that no row can make the engine raise.
    """
    tree = _parse(text, option)
    node = Checker(columns, option, ALLOWED).boolean(tree, 0)
    return Condition(node, text)


def parse_key(text: str, columns: Mapping[str, str], option: str = "--column") -> Key:
    """``text`` as a group key: one column (quoted or not) of kind int, str or bool."""
    tree = _parse(text, option)
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if not isinstance(tree, exp.Column):
        raise ConditionError(f"{option}: a group key is one column name, got {text!r}")
    column = Checker(columns, option, ALLOWED).column(tree)
    if column.kind == "float":
        raise ConditionError(
            f"{option}: column {column.name!r} is float: a float column cannot be a group "
            "key (its values are no listable domain); bin it, or use sum or mean"
        )
    return Key(column.name, column.kind)


def literal_for(kind: str, value: Value | bool, option: str) -> Lit:
    """``value`` as a literal for a column of ``kind``, or a CuratorError naming it."""
    fits = (
        value is None
        or (kind == "bool" and isinstance(value, bool))
        or (kind == "str" and isinstance(value, str) and "\x00" not in value)
        or (kind == "int" and isinstance(value, int) and not isinstance(value, bool))
        or (kind == "float" and isinstance(value, int | float) and not isinstance(value, bool))
    )
    if not fits:
        raise CuratorError(f"{option}: value {value!r} does not fit a {kind} column")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise CuratorError(f"{option}: value {value} is outside the 64-bit range")
    if isinstance(value, float) and not math.isfinite(value):
        raise CuratorError(f"{option}: value {value!r} is not finite")
    return Lit(value)


def equals(key: Key, value: Value | bool, option: str = "--values") -> Condition:
    """The condition ``key = value`` (``key IS NULL`` for None), e.g. for the count of a value."""
    literal = literal_for(key.kind, value, option)
    column = Col(key.column, key.kind)
    node: Node = IsNull(column) if value is None else Compare("=", column, literal)
    shown = f"{key.column} IS NULL" if value is None else f"{key.column} = {value!r}"
    return Condition(node, shown)


def and_(*conditions: Condition | None) -> Condition | None:
    """The conjunction of the conditions given (None ones skipped); None if none is given."""
    present = [condition for condition in conditions if condition is not None]
    if not present:
        return None
    node, text = present[0].node, present[0].text
    for condition in present[1:]:
        node = BoolOp("AND", node, condition.node)
        text = f"({text}) AND ({condition.text})"
    return Condition(node, text)
