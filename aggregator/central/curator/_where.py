"""The curator's ``--where`` language: a tokenizer and recursive-descent parser, never eval."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "And",
    "Compare",
    "Condition",
    "ConditionError",
    "Not",
    "Or",
    "Value",
    "parse_where",
    "value_condition",
]

Value = int | float | str | None
"""A cell: an int or float of a numeric column, a str, or None (an empty numeric cell)."""

GRAMMAR = """\
condition  := or
or         := and ("or" and)*
and        := unary ("and" unary)*
unary      := "not" unary | "(" or ")" | comparison
comparison := COLUMN ("=" | "!=" | "<" | "<=" | ">" | ">=") LITERAL
COLUMN     := a name [A-Za-z_][A-Za-z0-9_]*, or any name in double quotes ("" for ")
LITERAL    := a number (-12, 3.5, 1e3) or a string in single quotes ('' for ')"""

OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
KEYWORDS = {"and", "or", "not"}
_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![A-Za-z0-9_.])
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><=|>=|!=|=|<|>)
      | (?P<paren>[()])""",
    re.VERBOSE,
)


class ConditionError(ValueError):
    """A condition that does not parse or does not fit the table: names the token and position."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"--where: {message} at position {position}")
        self.position = position


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, name, quoted, op, paren, keyword, end
    text: str
    position: int  # 0-based offset in the condition
    value: object = None


def _quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """The content of a quoted token starting at ``start`` (doubled quote = one), and its end."""
    chunks = []
    index = start + 1
    while True:
        end = text.find(quote, index)
        if end < 0:
            kind = "string" if quote == "'" else "column name"
            raise ConditionError(
                f"unterminated {kind} starting {text[start : start + 20]!r}", start
            )
        chunks.append(text[index:end])
        if text.startswith(quote * 2, end):
            chunks.append(quote)
            index = end + 2
            continue
        return "".join(chunks), end + 1


def _tokens(text: str) -> list[_Token]:
    """Split ``text`` into tokens; an unknown character is an error naming it and its place."""
    tokens = []
    index = 0
    while index < len(text):
        char = text[index]
        if char in "'\"":
            content, end = _quoted(text, index, char)
            kind = "string" if char == "'" else "quoted"
            tokens.append(_Token(kind, text[index:end], index, content))
            index = end
            continue
        match = _TOKEN.match(text, index)
        if match is None:
            raise ConditionError(f"unexpected character {char!r}", index)
        kind = str(match.lastgroup)
        word = match.group()
        if kind == "number":
            number: float = float(word)
            if re.fullmatch(r"-?\d+", word):
                number = int(word)
            elif number in (float("inf"), float("-inf")):
                raise ConditionError(f"number {word!r} is out of range", index)
            tokens.append(_Token(kind, word, index, number))
        elif kind == "name" and word.lower() in KEYWORDS:
            tokens.append(_Token("keyword", word.lower(), index))
        elif kind != "space":
            tokens.append(_Token(kind, word, index, word))
        index = match.end()
    tokens.append(_Token("end", "end of condition", len(text)))
    return tokens


@dataclass(frozen=True)
class Compare:
    """``column op literal``, with the column's position for error messages."""

    column: str
    op: str
    literal: int | float | str
    position: int

    def evaluate(self, row: Mapping[str, Value]) -> bool:
        """The comparison on one row; an empty (None) cell makes it false."""
        cell = row[self.column]
        if cell is None or isinstance(cell, str) != isinstance(self.literal, str):
            return False  # an empty cell, or a type :meth:`check` refuses
        return bool(OPERATORS[self.op](cell, self.literal))

    def columns(self) -> set[str]:
        """The column this comparison reads."""
        return {self.column}

    def check(self, types: Mapping[str, str]) -> None:
        """Raise naming the column if it is unknown or its type differs from the literal's."""
        kind = types.get(self.column)
        if kind is None:
            known = ", ".join(types)
            raise ConditionError(
                f"unknown column {self.column!r} (columns: {known})", self.position
            )
        if (kind == "str") != isinstance(self.literal, str):
            shown = f"'{self.literal}'" if isinstance(self.literal, str) else repr(self.literal)
            raise ConditionError(
                f"column {self.column!r} is {kind} but is compared with {shown}", self.position
            )


@dataclass(frozen=True)
class Not:
    """``not operand``."""

    operand: Condition

    def evaluate(self, row: Mapping[str, Value]) -> bool:
        """True when the operand is false."""
        return not self.operand.evaluate(row)

    def columns(self) -> set[str]:
        """The columns the operand reads."""
        return self.operand.columns()

    def check(self, types: Mapping[str, str]) -> None:
        """Check the operand."""
        self.operand.check(types)


@dataclass(frozen=True)
class And:
    """``left and right``."""

    left: Condition
    right: Condition

    def evaluate(self, row: Mapping[str, Value]) -> bool:
        """True when both are."""
        return self.left.evaluate(row) and self.right.evaluate(row)

    def columns(self) -> set[str]:
        """The columns both sides read."""
        return self.left.columns() | self.right.columns()

    def check(self, types: Mapping[str, str]) -> None:
        """Check both sides."""
        self.left.check(types)
        self.right.check(types)


@dataclass(frozen=True)
class Or:
    """``left or right``."""

    left: Condition
    right: Condition

    def evaluate(self, row: Mapping[str, Value]) -> bool:
        """True when either is."""
        return self.left.evaluate(row) or self.right.evaluate(row)

    def columns(self) -> set[str]:
        """The columns both sides read."""
        return self.left.columns() | self.right.columns()

    def check(self, types: Mapping[str, str]) -> None:
        """Check both sides."""
        self.left.check(types)
        self.right.check(types)


Condition = Compare | Not | And | Or

MAX_DEPTH = 100
"""Nesting deeper than this (parentheses, ``not``) is refused rather than recursing on."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.index = 0
        self.depth = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def take(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def keyword(self, word: str) -> bool:
        if self.current.kind == "keyword" and self.current.text == word:
            self.index += 1
            return True
        return False

    def unexpected(self, wanted: str) -> ConditionError:
        token = self.current
        shown = token.text if token.kind == "end" else repr(token.text)
        return ConditionError(f"expected {wanted}, got {shown}", token.position)

    def parse(self) -> Condition:
        condition = self.disjunction()
        if self.current.kind != "end":
            raise self.unexpected("'and', 'or' or the end")
        return condition

    def disjunction(self) -> Condition:
        condition = self.conjunction()
        while self.keyword("or"):
            condition = Or(condition, self.conjunction())
        return condition

    def conjunction(self) -> Condition:
        condition = self.unary()
        while self.keyword("and"):
            condition = And(condition, self.unary())
        return condition

    def unary(self) -> Condition:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConditionError(f"nesting deeper than {MAX_DEPTH}", self.current.position)
        try:
            if self.keyword("not"):
                return Not(self.unary())
            if self.current.kind == "paren" and self.current.text == "(":
                self.take()
                condition = self.disjunction()
                if not (self.current.kind == "paren" and self.current.text == ")"):
                    raise self.unexpected("')'")
                self.take()
                return condition
            return self.comparison()
        finally:
            self.depth -= 1

    def comparison(self) -> Compare:
        if self.current.kind not in ("name", "quoted"):
            raise self.unexpected("a column name, 'not' or '('")
        column = self.take()
        if self.current.kind != "op":
            raise self.unexpected("a comparison (= != < <= > >=)")
        op = self.take().text
        if self.current.kind not in ("number", "string"):
            raise self.unexpected("a number or a 'quoted string'")
        literal = self.take().value
        assert isinstance(literal, int | float | str)
        return Compare(str(column.value), op, literal, column.position)


def parse_where(text: str, types: Mapping[str, str] | None = None) -> Condition:
    """Parse a condition; with ``types`` (column: int|float|str), check its columns too.

    Raises:
        ConditionError: naming the bad token, column or literal and its 0-based position.
    """
    condition = _Parser(text).parse()
    if types is not None:
        condition.check(types)
    return condition


def value_condition(column: str, value: Value, condition: Condition | None) -> Condition:
    """``column = value``, and ``condition`` if given (a histogram bin's cells)."""
    assert value is not None
    equal = Compare(column, "=", value, 0)
    return equal if condition is None else And(equal, condition)
