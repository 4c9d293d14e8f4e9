"""The ``--where`` language: parse results, errors naming token and position, fuzzed."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.central.curator import Condition, ConditionError, Value, parse_where
from deniable.aggregator.central.curator._where import And, Compare, Not, Or

TYPES = {"age": "int", "score": "float", "dept": "str", "odd name": "str"}
ROW: dict[str, Value] = {"age": 34, "score": 2.5, "dept": "HR", "odd name": "it's"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age >= 30", True),
        ("age > 34", False),
        ("age = 34 and dept = 'HR'", True),
        ("age < 30 or dept != 'IT'", True),
        ("not age = 34", False),
        ("age >= 30 and (dept = 'HR' or not score = 2.5)", True),
        ("NOT (age <= 33) AND score >= -1e3", True),
        ("\"odd name\" = 'it''s'", True),
        ("dept < 'IT'", True),
        ("score = 2.50", True),
    ],
)
def test_conditions_evaluate_as_written(text: str, expected: bool) -> None:
    assert parse_where(text, TYPES).evaluate(ROW) is expected


def test_and_binds_tighter_than_or() -> None:
    condition = parse_where("age = 1 or age = 34 and dept = 'IT'", TYPES)
    assert condition == Or(
        Compare("age", "=", 1, 0),
        And(Compare("age", "=", 34, 11), Compare("dept", "=", "IT", 24)),
    )
    assert condition.evaluate(ROW) is False


def test_an_empty_cell_makes_a_comparison_false() -> None:
    row: dict[str, Value] = {**ROW, "age": None}
    assert parse_where("age >= 0", TYPES).evaluate(row) is False
    assert parse_where("not age >= 0", TYPES).evaluate(row) is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "age >= 30 and",
            r"expected a column name, 'not' or '\(', got end of condition at position 13",
        ),
        ("age >> 3", r"expected a number or a 'quoted string', got '>' at position 5"),
        ("age = 3)", r"expected 'and', 'or' or the end, got '\)' at position 7"),
        ("(age = 3", r"expected '\)', got end of condition at position 8"),
        ("age ~ 3", r"unexpected character '~' at position 4"),
        ("dept = 'HR", r"unterminated string starting \"'HR\" at position 7"),
        ("age = 3 an dept = 'x'", r"expected 'and', 'or' or the end, got 'an' at position 8"),
        (
            "salary > 3",
            r"unknown column 'salary' \(columns: age, score, dept, odd name\) at position 0",
        ),
        ("age = 'x'", r"column 'age' is int but is compared with 'x' at position 0"),
        ("dept = 3", r"column 'dept' is str but is compared with 3 at position 0"),
        ("age = 1e999", r"number '1e999' is out of range at position 6"),
        (
            "__import__('os') = 1",
            r"expected a comparison \(= != < <= > >=\), got '\(' at position 10",
        ),
        ("", r"expected a column name, 'not' or '\(', got end of condition at position 0"),
    ],
)
def test_errors_name_the_bad_token_or_column_and_its_position(text: str, message: str) -> None:
    with pytest.raises(ConditionError, match=f"^--where: {message}$"):
        parse_where(text, TYPES)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(ConditionError, match="nesting deeper than 100"):
        parse_where("(" * 5000 + "age = 1" + ")" * 5000, TYPES)
    with pytest.raises(ConditionError, match="nesting deeper than 100"):
        parse_where("not " * 5000 + "age = 1", TYPES)


def _parse_or_error(text: str) -> Condition | ConditionError:
    """The parse, or our error (anything else propagates and fails the test)."""
    try:
        return parse_where(text, TYPES)
    except ConditionError as error:
        return error


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("agedptsco =!<>()'\"-.1e9 andortNOT_")), max_size=40))
def test_any_text_parses_or_raises_our_error(text: str) -> None:
    outcome = _parse_or_error(text)
    if isinstance(outcome, ConditionError):
        assert 0 <= outcome.position <= len(text)
        assert str(outcome).startswith("--where: ")
    else:
        assert isinstance(outcome.evaluate(ROW), bool)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_unicode_text_parses_or_raises_our_error(text: str) -> None:
    outcome = _parse_or_error(text)
    if isinstance(outcome, ConditionError):
        assert 0 <= outcome.position <= len(text)


# --- generated valid conditions evaluate like a reference evaluator --------------------

Tree = tuple[Any, ...]
REFERENCE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}  # fmt: skip


def _literal(kind: str) -> st.SearchStrategy[Any]:
    if kind == "int":
        return st.integers(-50, 50)
    if kind == "float":
        return st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 2))
    return st.text(alphabet="abHRI' \"", max_size=4)


comparisons = st.sampled_from(sorted(TYPES)).flatmap(
    lambda column: st.tuples(
        st.just("cmp"), st.just(column), st.sampled_from(sorted(REFERENCE)),
        _literal(TYPES[column]),
    )
)  # fmt: skip
trees: st.SearchStrategy[Tree] = st.recursive(
    comparisons,
    lambda inner: st.one_of(
        st.tuples(st.just("not"), inner),
        st.tuples(st.sampled_from(["and", "or"]), inner, inner),
    ),
    max_leaves=12,
)
rows = st.fixed_dictionaries(
    {
        "age": st.one_of(st.none(), st.integers(-50, 50)),
        "score": st.one_of(st.none(), st.floats(-50, 50, allow_nan=False)),
        "dept": st.text(alphabet="abHRI' \"", max_size=4),
        "odd name": st.text(alphabet="abHRI' \"", max_size=4),
    }
)


def _render(tree: Tree) -> str:
    """The tree as text, fully parenthesized; names and strings quoted when they must be."""
    if tree[0] == "cmp":
        _, column, op, literal = tree
        name = column if column.isidentifier() else '"' + column.replace('"', '""') + '"'
        value = (
            "'" + literal.replace("'", "''") + "'" if isinstance(literal, str) else repr(literal)
        )
        return f"{name} {op} {value}"
    if tree[0] == "not":
        return f"NOT ({_render(tree[1])})"
    return f"({_render(tree[1])}) {tree[0]} ({_render(tree[2])})"


def _reference(tree: Tree, row: Mapping[str, Any]) -> bool:
    if tree[0] == "cmp":
        _, column, op, literal = tree
        return row[column] is not None and REFERENCE[op](row[column], literal)
    if tree[0] == "not":
        return not _reference(tree[1], row)
    left, right = _reference(tree[1], row), _reference(tree[2], row)
    return left and right if tree[0] == "and" else left or right


@settings(max_examples=300, deadline=None)
@given(trees, rows)
def test_rendered_conditions_evaluate_like_the_reference(tree: Tree, row: dict[str, Any]) -> None:
    condition = parse_where(_render(tree), TYPES)
    assert condition.evaluate(row) is _reference(tree, row)


def test_not_is_a_node_of_its_own() -> None:
    assert parse_where("not not age = 1", TYPES) == Not(Not(Compare("age", "=", 1, 8)))
