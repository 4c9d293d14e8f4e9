"""Conditions and keys: accepted ones render for both dialects, refused ones name the token."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.central.curator.engine import (
    Condition,
    ConditionError,
    Key,
    and_,
    equals,
    parse_condition,
    parse_key,
)
from deniable.aggregator.central.curator.engine._ast import (
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
)

COLUMNS = {"age": "int", "dept": "str", "salary": "float", "ok": "bool", "my col": "int"}
COLUMNS_WITH_BLOB = {**COLUMNS, "photo": "BLOB"}
DOUBLE = {"duckdb": "DOUBLE", "postgres": "DOUBLE PRECISION"}

# (condition, rendered SQL with {double} for the dialect's binary64 type)
ACCEPTED = [
    ("age > 3", '("age" > 3)'),
    ("age > 3 and dept = 'hr'", '(("age" > 3) AND ("dept" = \'hr\'))'),
    ("age < 3 OR NOT ok", '(("age" < 3) OR (NOT "ok"))'),
    ("ok", '"ok"'),
    ("ok = TRUE", '("ok" = TRUE)'),
    ("Age <> -1", '("age" <> -1)'),
    ("age != 1", '("age" <> 1)'),
    ("age >= 1 and age <= 2", '(("age" >= 1) AND ("age" <= 2))'),
    ('"my col" IN (1, 2, 3)', '("my col" IN (1, 2, 3))'),
    ("age NOT IN (1)", '(NOT ("age" IN (1)))'),
    ("salary BETWEEN 1 AND 2.5", "(\"salary\" BETWEEN 1 AND CAST('2.5' AS {double}))"),
    ("salary = 1e3", "(\"salary\" = CAST('1000.0' AS {double}))"),
    ("dept LIKE 'h%'", "(\"dept\" LIKE 'h%' ESCAPE '\\')"),
    ("dept NOT ILIKE 'H\\_r'", "(NOT (\"dept\" ILIKE 'H\\_r' ESCAPE '\\'))"),
    ("dept IS NULL", '("dept" IS NULL)'),
    ("dept IS NOT NULL", '(NOT ("dept" IS NULL))'),
    ("dept = 'it''s'", "(\"dept\" = 'it''s')"),
    ("(((age = 1)))", '("age" = 1)'),
    ("age = -9223372036854775808", '("age" = -9223372036854775808)'),
]

# (condition, a token the message must name)
REFUSED = [
    ("read_csv('/etc/passwd')", "function read_csv"),
    ("read_parquet('staff.parquet')", "function read_parquet"),
    ("(select 1)", "subquery (SELECT 1)"),
    ("age IN (select 1)", "subquery"),
    ("1; drop table t", "';'"),
    ("age = 1; select 2", "';'"),
    ("age + 1 > 3", "operator +"),
    ("dept = 'a' || 'b'", "operator ||"),
    ("cast(age as int) = 1", "cast CAST(age AS INT)"),
    ("age = 1::int", "cast"),
    ("getenv('HOME') = ''", "function getenv"),
    ("current_setting('x') = 'y'", "function current_setting"),
    ("pg_read_file('/etc/passwd') = ''", "function pg_read_file"),
    ("lower(dept) = 'hr'", "function lower"),
    ("age = 1 -- comment", "comment 'comment'"),
    ("age = 1 /* x */", "comment 'x'"),
    ("nope = 1", "unknown column 'nope'; the columns are: 'age', 'dept'"),
    ("dept = 3", "column 'dept' (str) with 3 (int)"),
    ("ok = 1", "column 'ok' (bool) with 1 (int)"),
    ("age = 'x'", "column 'age' (int) with 'x' (str)"),
    ("age LIKE '3%'", "LIKE needs a str column, got column 'age' (int)"),
    ("age IN (1, 'a')", "IN cannot mix kinds"),
    ("age = NULL", "use IS [NOT] NULL"),
    ("age IN (1, NULL)", "use IS [NOT] NULL"),
    ("age", "column 'age' (int) is not a condition"),
    ("*", "* (all columns)"),
    ("t.age = 1", "qualified column t.age"),
    ("age IS TRUE", "IS TRUE"),
    ("age = ?", "placeholder"),
    ("dept SIMILAR TO 'a'", "similarto"),
    ("dept LIKE 'a\\'", "ends with the escape"),
    ("dept LIKE 'a' ESCAPE '!'", "ESCAPE"),
    ("age = 99999999999999999999", "outside the 64-bit range"),
    ("salary = 1e999", "too large"),
    ("photo IS NULL", "column 'photo' has type BLOB"),
    ("age > ", "cannot parse"),
    ("", "empty condition"),
    ("(" * 70 + "ok" + ")" * 70, "nested deeper than 32 parentheses"),
    (" AND ".join(["ok"] * 100), "nested deeper than 64 levels"),
]


@pytest.mark.parametrize(("text", "rendered"), ACCEPTED)
@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_accepted_conditions_render_for_each_dialect(
    text: str, rendered: str, dialect: str
) -> None:
    condition = parse_condition(text, COLUMNS)
    assert condition.sql(dialect) == rendered.format(double=DOUBLE[dialect])
    assert condition.text == text


@pytest.mark.parametrize(("text", "token"), REFUSED)
def test_refused_conditions_name_the_token(text: str, token: str) -> None:
    with pytest.raises(ConditionError) as caught:
        parse_condition(text, COLUMNS_WITH_BLOB)
    message = str(caught.value)
    assert message.startswith("--where: ")
    assert token in message


def test_functions_are_refused_with_the_allow_list_named() -> None:
    with pytest.raises(ConditionError, match=r"function read_csv is not allowed \(only columns"):
        parse_condition("read_csv('/etc/passwd')", COLUMNS)


def test_the_option_named_is_the_callers() -> None:
    with pytest.raises(ConditionError, match=r"^--filter: function lower"):
        parse_condition("lower(dept) = 'x'", COLUMNS, option="--filter")


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown SQL dialect 'mysql'"):
        parse_condition("ok", COLUMNS).sql("mysql")


def test_unquoted_columns_match_case_insensitively_unless_ambiguous() -> None:
    two = {"Ab": "int", "aB": "int"}
    with pytest.raises(ConditionError, match="column 'ab' is ambiguous"):
        parse_condition("ab = 1", two)
    assert parse_condition('"aB" = 1', two).sql("duckdb") == '("aB" = 1)'
    assert parse_condition("Ab = 1", two).sql("duckdb") == '("Ab" = 1)'
    with pytest.raises(ConditionError, match="unknown column 'ab'"):
        parse_condition('"ab" = 1', two)


@pytest.mark.parametrize(
    ("text", "key"),
    [("dept", Key("dept", "str")), ('"my col"', Key("my col", "int")), ("OK", Key("ok", "bool"))],
)
def test_keys(text: str, key: Key) -> None:
    assert parse_key(text, COLUMNS) == key
    assert key.sql("postgres") == key.sql("duckdb") == '"' + key.column + '"'


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("salary", "column 'salary' is float"),
        ("age + 1", "one column name, got 'age + 1'"),
        ("nope", "unknown column 'nope'"),
        ("photo", "type BLOB"),
        ("lower(dept)", "one column name"),
    ],
)
def test_refused_keys(text: str, token: str) -> None:
    with pytest.raises(ConditionError, match=r"^--column: ") as caught:
        parse_key(text, COLUMNS_WITH_BLOB)
    assert token in str(caught.value)


def test_equals_and_and_build_conditions() -> None:
    key = parse_key("dept", COLUMNS)
    where = parse_condition("age > 3", COLUMNS)
    both = and_(where, equals(key, "hr"))
    assert both is not None
    assert both.sql("postgres") == '(("age" > 3) AND ("dept" = \'hr\'))'
    assert equals(key, None).sql("duckdb") == '("dept" IS NULL)'
    assert and_(None, None) is None
    assert and_(None, where) == where
    with pytest.raises(ValueError, match="value 3 does not fit a str column"):
        equals(key, 3)


_SCALARS = (Col, Lit)
_BOOLEANS = (Compare, BoolOp, Not, InList, Between, Like, IsNull)


def _allow_listed(node: Node) -> bool:
    if isinstance(node, Col | Lit):
        return node.kind == "bool"
    if isinstance(node, BoolOp):
        return _allow_listed(node.left) and _allow_listed(node.right)
    if isinstance(node, Not):
        return _allow_listed(node.operand)
    return isinstance(node, _BOOLEANS)


_ATOMS = st.sampled_from(
    [
        "age",
        "dept",
        "ok",
        '"my col"',
        "salary",
        "1",
        "'x'",
        "2.5",
        "NULL",
        "TRUE",
        "(",
        ")",
        ",",
        "=",
        "<>",
        "<",
        ">=",
        "AND",
        "OR",
        "NOT",
        "IN",
        "BETWEEN",
        "LIKE",
        "IS",
        ";",
        "--",
        "/*",
        "*/",
        "+",
        "read_csv",
        "select",
        "::",
        "'",
        '"',
        "?",
        "$1",
        "-",
        "e'\\n'",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(_ATOMS, max_size=12).map(" ".join)))
def test_any_text_parses_to_an_allow_listed_tree_or_raises_condition_error(text: str) -> None:
    try:
        condition = parse_condition(text, COLUMNS)
    except ConditionError:
        return
    assert isinstance(condition, Condition)
    assert _allow_listed(condition.node)
    for dialect in ("duckdb", "postgres"):
        assert isinstance(condition.sql(dialect), str)
