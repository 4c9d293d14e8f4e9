"""The allow-list: a sqlglot tree to a typed condition tree, refusing the rest by name."""

from __future__ import annotations

import math
from collections.abc import Mapping

from sqlglot import exp

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.engine._ast import (
    KINDS,
    LIKE_ESCAPE,
    Between,
    BoolOp,
    Col,
    Compare,
    InList,
    IsNull,
    Like,
    Lit,
    Node,
    Not,
    Scalar,
)

__all__ = ["MAX_DEPTH", "Checker", "ConditionError"]

MAX_DEPTH = 64
"""The deepest nesting of a condition's operators accepted."""

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_OPERATORS: dict[type[exp.Expression], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.IntDiv: "//",
    exp.Mod: "%",
    exp.Pow: "**",
    exp.DPipe: "||",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseXor: "^",
    exp.BitwiseNot: "~",
}
_NUMERIC = ("int", "float")


class ConditionError(CuratorError):
    """A condition or key that does not parse or is not allowed: names the option and token."""


def _snippet(node: exp.Expression) -> str:
    try:
        text = node.sql(dialect="duckdb")
    except Exception:  # rendering a refused node must not raise anything else
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def describe(node: exp.Expression) -> str:
    """What a refused node is, naming its token: 'function read_csv', 'operator +', ..."""
    if isinstance(node, exp.Cast | exp.TryCast):
        return f"cast {_snippet(node)}"
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}"
    if isinstance(node, exp.Subquery | exp.Query):
        return f"subquery {_snippet(node)}"
    if type(node) in _OPERATORS:
        return f"operator {_OPERATORS[type(node)]} in {_snippet(node)}"
    if isinstance(node, exp.Star):
        return "* (all columns)"
    if isinstance(node, exp.Alias):
        return f"alias {node.alias!r} in {_snippet(node)}"
    return f"{type(node).__name__.lower()} {_snippet(node)}"


def _extra_args(node: exp.Expression, allowed: set[str]) -> list[str]:
    return [k for k, v in node.args.items() if k not in allowed and v not in (None, False, [])]


class Checker:
    """Turns one sqlglot tree into a typed Node over ``columns`` (name -> kind)."""

    def __init__(self, columns: Mapping[str, str], option: str, allowed: str) -> None:
        self.columns = columns
        self.option = option
        self.allowed = allowed

    def refuse(self, what: str) -> ConditionError:
        """The error for a construct outside the allow-list."""
        return ConditionError(f"{self.option}: {what} is not allowed ({self.allowed})")

    def error(self, message: str) -> ConditionError:
        """An error about an allowed construct used wrongly (types, NULL, patterns)."""
        return ConditionError(f"{self.option}: {message}")

    def column(self, node: exp.Column) -> Col:
        """The source column a reference names: exact, else unquoted case-insensitively."""
        if _extra_args(node, {"this"}) or not isinstance(node.this, exp.Identifier):
            raise self.refuse(f"qualified column {_snippet(node)}")
        name, quoted = node.this.this, bool(node.this.args.get("quoted"))
        if name not in self.columns and not quoted:
            matches = [c for c in self.columns if c.casefold() == name.casefold()]
            if len(matches) > 1:
                raise self.error(f"column {name!r} is ambiguous: quote one of {matches}")
            name = matches[0] if matches else name
        if name not in self.columns:
            names = ", ".join(repr(c) for c in list(self.columns)[:50])
            raise self.error(f"unknown column {name!r}; the columns are: {names}")
        kind = self.columns[name]
        if kind not in KINDS:
            raise self.error(
                f"column {name!r} has type {kind}, which queries cannot use "
                "(only int, float, str and bool columns)"
            )
        return Col(name, kind)

    def scalar(self, node: exp.Expression, depth: int) -> Scalar:
        """A column or a literal (a unary minus folded into a number)."""
        if depth > MAX_DEPTH:
            raise self.error(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, exp.Paren):
            return self.scalar(node.this, depth + 1)
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Boolean):
            return Lit(bool(node.this))
        if isinstance(node, exp.Null):
            return Lit(None)
        if isinstance(node, exp.Neg):
            if isinstance(node.this, exp.Literal) and not node.this.is_string:
                return self.number_text(node.this.this, negate=True)
            inner = self.scalar(node.this, depth + 1)
            if not isinstance(inner, Lit) or inner.kind not in _NUMERIC:
                raise self.refuse(f"operator - in {_snippet(node)}")
            assert isinstance(inner.value, int | float)
            return self.number(-inner.value)
        if isinstance(node, exp.Literal) and not _extra_args(node, {"this", "is_string"}):
            if node.is_string:
                if "\x00" in node.this:
                    raise self.error("a string literal holds a NUL character")
                return Lit(node.this)
            return self.number_text(node.this)
        raise self.refuse(describe(node))

    def number_text(self, text: str, negate: bool = False) -> Lit:
        """A numeric literal's text as an int (when integral in form) or a finite float."""
        try:
            value: int | float = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise self.error(f"cannot read the number {text!r}") from None
        return self.number(-value if negate else value)

    def number(self, value: int | float) -> Lit:
        """A number in range: a 64-bit int or a finite float."""
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise self.error(f"the number {value} is outside the 64-bit range")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error("a number is too large for a double")
        return Lit(value)

    def _compatible(self, what: str, *scalars: Scalar) -> None:
        """Refuse NULL operands and mixed kinds (str with number, bool with anything else)."""
        for scalar in scalars:
            if isinstance(scalar, Lit) and scalar.value is None:
                raise self.error(f"{what} with NULL is never true: use IS [NOT] NULL")
        groups = {"numeric" if s.kind in _NUMERIC else s.kind for s in scalars}
        if len(groups) > 1:
            shown = " with ".join(_shown(s) for s in scalars)
            raise self.error(f"{what} cannot mix kinds: {shown}")

    def boolean(self, node: exp.Expression, depth: int) -> Node:
        """A condition: every allowed construct, typed; anything else refused by name."""
        if depth > MAX_DEPTH:
            raise self.error(f"nested deeper than {MAX_DEPTH} levels")
        kind = type(node)
        if kind is exp.Paren:
            return self.boolean(node.this, depth + 1)
        if kind in (exp.And, exp.Or):
            op = "AND" if kind is exp.And else "OR"
            left = self.boolean(node.this, depth + 1)
            return BoolOp(op, left, self.boolean(node.expression, depth + 1))
        if kind is exp.Not:
            return Not(self.boolean(node.this, depth + 1))
        if kind in _COMPARISONS and not _extra_args(node, {"this", "expression"}):
            op = _COMPARISONS[kind]
            left = self.scalar(node.this, depth + 1)
            right = self.scalar(node.expression, depth + 1)
            self._compatible(f"comparison {op}", left, right)
            return Compare(op, left, right)
        if kind is exp.In:
            return self._in(node, depth)
        if kind is exp.Between and not _extra_args(node, {"this", "low", "high"}):
            operand, low, high = (
                self.scalar(node.args[k], depth + 1) for k in ("this", "low", "high")
            )
            self._compatible("BETWEEN", operand, low, high)
            return Between(operand, low, high)
        if kind in (exp.Like, exp.ILike):
            return self._like(node, depth)
        if kind is exp.Is and isinstance(node.expression, exp.Null):
            return IsNull(self.scalar(node.this, depth + 1))
        if kind is exp.Is:
            raise self.refuse(f"IS {_snippet(node.expression)} (only IS [NOT] NULL)")
        if kind is exp.Escape:
            raise self.refuse(f"ESCAPE (LIKE always escapes with {LIKE_ESCAPE!r})")
        if kind in (exp.Column, exp.Boolean, exp.Null, exp.Literal):
            scalar = self.scalar(node, depth + 1)
            if scalar.kind != "bool":
                raise self.error(f"{_shown(scalar)} is not a condition: compare it")
            return scalar
        raise self.refuse(describe(node))

    def _in(self, node: exp.Expression, depth: int) -> Node:
        extra = _extra_args(node, {"this", "expressions"})
        if extra:
            what = node.args[extra[0]]
            raise self.refuse(describe(what) if isinstance(what, exp.Expression) else "IN form")
        operand = self.scalar(node.this, depth + 1)
        values = [self.scalar(value, depth + 1) for value in node.expressions]
        if not values:
            raise self.error("IN needs at least one value")
        for value in values:
            if not isinstance(value, Lit):
                raise self.error(f"IN lists literals only, got {_shown(value)}")
        self._compatible("IN", operand, *values)
        return InList(operand, tuple(v for v in values if isinstance(v, Lit)))

    def _like(self, node: exp.Expression, depth: int) -> Node:
        word = "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
        if _extra_args(node, {"this", "expression", "negate"}):
            raise self.refuse(f"{word} form {_snippet(node)}")
        operand = self.scalar(node.this, depth + 1)
        pattern = self.scalar(node.expression, depth + 1)
        if operand.kind != "str":
            raise self.error(f"{word} needs a str column, got {_shown(operand)}")
        if not isinstance(pattern, Lit) or not isinstance(pattern.value, str):
            raise self.error(f"{word} needs a string pattern, got {_shown(pattern)}")
        text = pattern.value
        index = 0
        while index < len(text):
            if text[index] == LIKE_ESCAPE:
                if index + 1 == len(text):
                    raise self.error(f"{word} pattern {text!r} ends with the escape {LIKE_ESCAPE}")
                index += 1
            index += 1
        like: Node = Like(operand, text, word == "ILIKE")
        return Not(like) if node.args.get("negate") else like


def _shown(scalar: Scalar) -> str:
    if isinstance(scalar, Col):
        return f"column {scalar.name!r} ({scalar.kind})"
    return f"{scalar.value!r} ({scalar.kind})" if scalar.value is not None else "NULL"
