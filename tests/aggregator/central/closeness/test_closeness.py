"""ε- and (n, ε)-closeness: hand-computed distances, the nine-row example, brute force."""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.central.closeness import (
    Table,
    closeness,
    kl_bits,
    l2_squared,
    measure,
    n_closeness,
    parse_epsilon,
    read_table,
    variational,
)
from deniable.aggregator.central.closeness._search import _descend, solve_l1

# Nine people, generalized to three classes of three by postcode range and points range;
# the sensitive column is the operating system they use.
NINE = Table(
    "nine.csv",
    ("PLZ", "Points", "System"),
    (
        ("3200-3299", "75-90", "iOS"),
        ("3200-3299", "75-90", "Android"),
        ("3200-3299", "75-90", "MacOS"),
        ("2600-3199", "35-45", "Windows"),
        ("2600-3199", "35-45", "Linux"),
        ("2600-3199", "35-45", "Windows"),
        ("3700-3899", "25-34", "MacOS"),
        ("3700-3899", "25-34", "Windows"),
        ("3700-3899", "25-34", "Android"),
    ),
)
QUASI = ("PLZ", "Points")
F = Fraction


def test_the_nine_row_example_gives_4_9_for_its_first_class() -> None:
    report = closeness(NINE, "System", QUASI, measure("variational"))
    assert report.values == ("iOS", "Android", "MacOS", "Windows", "Linux")
    assert report.counts == (1, 2, 2, 3, 1)
    # Whole table 1/9, 2/9, 2/9, 3/9, 1/9; first class 1/3 for each of iOS, Android, MacOS:
    # ½·(2/9 + 1/9 + 1/9 + 3/9 + 1/9) = 4/9.
    assert [group.exact for group in report.classes] == [F(4, 9), F(5, 9), F(2, 9)]
    assert [group.size for group in report.classes] == [3, 3, 3]
    assert report.classes[0].quasi == ("3200-3299", "75-90")
    assert report.largest.quasi == ("2600-3199", "35-45")


def test_each_distance_of_the_nine_row_example_by_hand() -> None:
    l1 = closeness(NINE, "System", QUASI, measure("l1"))
    assert [group.exact for group in l1.classes] == [F(8, 9), F(10, 9), F(4, 9)]
    l2 = closeness(NINE, "System", QUASI, measure("l2"))
    # First class: (2² + 1² + 1² + 3² + 1²)/81 = 16/81; second: (1+4+4+9+4)/81 = 22/81.
    assert l2.classes[0].distance == pytest.approx(4 / 9, rel=1e-15)
    assert l2.classes[1].distance == pytest.approx(math.sqrt(22) / 9, rel=1e-15)
    assert l2.classes[0].exact is None
    kl = closeness(NINE, "System", QUASI, measure("kl"))
    # First class: ⅓·(log2 3 + 2·log2 3/2) = ⅓·log2 6.75.
    assert kl.classes[0].distance == pytest.approx(math.log2(6.75) / 3, rel=1e-12)


def test_epsilon_closeness_is_decided_exactly_at_the_boundary() -> None:
    assert closeness(NINE, "System", QUASI, measure("variational"), F(5, 9)).close is True
    below = closeness(NINE, "System", QUASI, measure("variational"), parse_epsilon("0.555"))
    assert below.close is False
    assert [below.within(group) for group in below.classes] == [True, False, True]
    assert closeness(NINE, "System", QUASI, measure("l2"), F(4, 9)).within(
        closeness(NINE, "System", QUASI, measure("l2")).classes[0]
    )
    assert closeness(NINE, "System", QUASI, measure("variational")).close is None


def test_distances_against_hand_computed_values() -> None:
    p, q = (F(1, 2), F(1, 2), F(0)), (F(1, 4), F(1, 4), F(1, 2))
    assert variational(p, q) == F(1, 2)
    assert measure("l1").exact(p, q) == 1
    assert l2_squared(p, q) == F(1, 16) + F(1, 16) + F(1, 4)
    assert kl_bits(p, q) == pytest.approx(1.0)  # ½·log2 2 twice; the 0·log 0 term counts 0
    assert kl_bits(q, p) == math.inf  # q puts 1/2 where p puts nothing
    assert kl_bits(p, p) == 0.0


def test_the_reference_set_may_be_closer_than_the_whole_table() -> None:
    """(6, ½): M without iOS (2 Android, 2 MacOS, 3 Windows, 1 Linux) or of six rows.

    The first two classes share no value, so their variational distance is 1 and no M is
    within less than ½ of both; the whole table is only 5/9-close.
    """
    report = closeness(NINE, "System", QUASI, measure("variational"))
    found = n_closeness(report, 6, F(1, 2))
    assert (found.answer, found.exact, found.method) == (True, True, "milp")
    assert found.witness is not None
    assert sum(found.witness) >= 6
    assert max(found.distances or ()) <= 0.5
    assert n_closeness(report, 1, parse_epsilon("0.49")).answer is False
    assert n_closeness(report, 9, F(1, 2)).answer is False  # M is the table: 5/9
    assert n_closeness(report, 9, F(5, 9)).witness == (1, 2, 2, 3, 1)


def test_n_must_fit_the_table_and_epsilon_its_distance() -> None:
    report = closeness(NINE, "System", QUASI, measure("variational"))
    with pytest.raises(ValueError, match=r"n must be in \[1, 9\] \(the table's rows\), got 10"):
        n_closeness(report, 10, F(1, 2))
    with pytest.raises(ValueError, match="epsilon 1/1234567 has too many digits"):
        n_closeness(report, 3, F(1, 1234567))
    with pytest.raises(ValueError, match=r"epsilon must be in \[0, 1\] for the variational"):
        closeness(NINE, "System", QUASI, measure("variational"), F(3, 2))
    with pytest.raises(ValueError, match=r"\[0, sqrt\(2\)\] for the l2 distance, got 3/2"):
        closeness(NINE, "System", QUASI, measure("l2"), F(3, 2))
    assert closeness(NINE, "System", QUASI, measure("kl"), F(30)).close is True
    with pytest.raises(ValueError, match="unknown distance 'l3'; use one of variational"):
        measure("l3")
    with pytest.raises(ValueError, match="epsilon 'x' is not a number"):
        parse_epsilon("x")
    with pytest.raises(ValueError, match="epsilon 'nan' is not a number"):
        parse_epsilon("nan")


def test_columns_must_exist_and_differ() -> None:
    with pytest.raises(ValueError, match=r"sensitive column 'OS' is not in nine.csv \(columns: "):
        closeness(NINE, "OS", QUASI, measure("l1"))
    with pytest.raises(ValueError, match=r"quasi-identifier column 'Age' is not in nine\.csv"):
        closeness(NINE, "System", ("PLZ", "Age"), measure("l1"))
    with pytest.raises(ValueError, match="'System' cannot be both sensitive and quasi"):
        closeness(NINE, "System", ("System",), measure("l1"))
    with pytest.raises(ValueError, match="no rows"):
        closeness(Table("e.csv", NINE.columns, ()), "System", QUASI, measure("l1"))


def test_read_table_keeps_values_as_written_and_names_faults(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text('\ufeffa,b\n" x",1\n\n"y, z",2\n', encoding="utf-8")
    table = read_table(good)
    assert table.columns == ("a", "b")
    assert table.rows == ((" x", "1"), ("y, z", "2"))
    faults = {
        "empty.csv": (b"", "empty file"),
        "short.csv": (b"a,b\n1\n", "record 2 has 1 fields, the header 2"),
        "twice.csv": (b"a,a\n1,2\n", "column 'a' appears twice"),
        "latin.csv": ("a\n\xe9\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 2)"),
    }
    for name, (data, message) in faults.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=re.escape(message)):
            read_table(tmp_path / name)
    with pytest.raises(ValueError, match=r"missing\.csv: cannot read"):
        read_table(tmp_path / "missing.csv")


# --- (n, ε) against brute force on small random tables ---------------------------------

EPSILONS = [F(0), F(1, 10), F(1, 4), F(1, 3), F(2, 5), F(1, 2), F(3, 5), F(3, 4), F(1)]


@st.composite
def tables(draw: st.DrawFn) -> Table:
    """Up to 4 classes of 1-4 rows over 2-3 sensitive values."""
    values = draw(st.integers(2, 3))
    classes = draw(st.integers(1, 4))
    rows: list[tuple[str, str]] = []
    for group in range(classes):
        size = draw(st.integers(1, 4))
        rows.extend((str(group), f"v{draw(st.integers(0, values - 1))}") for _ in range(size))
    return Table("random.csv", ("q", "s"), tuple(rows))


def _brute_force(table: Table, name: str, n: int, epsilon: Fraction) -> list[tuple[int, ...]]:
    """Every count vector m (0 ≤ m_s ≤ n_s, Σm ≥ n) every class is within ε of."""
    values = sorted({s for _, s in table.rows})
    totals = [sum(1 for _, s in table.rows if s == value) for value in values]
    groups = {q: [sum(1 for g, s in table.rows if g == q and s == v) for v in values]
              for q, _ in table.rows}  # fmt: skip
    found = []
    for m in itertools.product(*(range(total + 1) for total in totals)):
        if sum(m) < max(n, 1):
            continue
        ref = [F(x, sum(m)) for x in m]
        ok = True
        for counts in groups.values():
            p = [F(c, sum(counts)) for c in counts]
            gaps = [abs(a - b) for a, b in zip(p, ref, strict=True)]
            if name == "variational":
                ok &= sum(gaps) / 2 <= epsilon
            elif name == "l1":
                ok &= sum(gaps) <= epsilon
            elif name == "l2":
                ok &= sum(g * g for g in gaps) <= epsilon * epsilon
            else:
                terms = [math.inf if b == 0 else float(a) * math.log2(a / b)
                         for a, b in zip(p, ref, strict=True) if a]  # fmt: skip
                ok &= sum(terms) <= float(epsilon)
        if ok:
            found.append(m)
    return found


def _in_report_order(table: Table, m: tuple[int, ...]) -> tuple[int, ...]:
    order = list(dict.fromkeys(s for _, s in table.rows))
    return tuple(m[order.index(value)] for value in sorted(order))


@settings(max_examples=200, deadline=None)
@given(
    tables(),
    st.sampled_from(["variational", "l1"]),
    st.sampled_from(EPSILONS),
    st.integers(1, 16),
)
def test_the_integer_program_agrees_with_brute_force(
    table: Table, name: str, epsilon: Fraction, n: int
) -> None:
    n = min(n, len(table.rows))
    report = closeness(table, "s", ("q",), measure(name))
    found = n_closeness(report, n, epsilon)
    feasible = _brute_force(table, name, n, epsilon)
    assert found.answer is bool(feasible)
    assert found.exact
    if found.witness is not None:
        assert _in_report_order(table, found.witness) in feasible
        assert sum(found.witness) == max(sum(m) for m in feasible)  # the largest M


@settings(max_examples=120, deadline=None)
@given(tables(), st.sampled_from(["l2", "kl"]), st.sampled_from(EPSILONS), st.integers(1, 16))
def test_l2_and_kl_agree_with_brute_force_by_search_and_by_bounds(
    table: Table, name: str, epsilon: Fraction, n: int
) -> None:
    n = min(n, len(table.rows))
    report = closeness(table, "s", ("q",), measure(name))
    feasible = _brute_force(table, name, n, epsilon)
    searched = n_closeness(report, n, epsilon)
    assert (searched.answer, searched.exact, searched.method) == (
        bool(feasible),
        True,
        "exhaustive",
    )
    bounded = n_closeness(report, n, epsilon, limit=0)
    if bounded.answer is None:
        assert not bounded.exact
        assert bounded.witness is None
    else:
        assert bounded.exact
        assert bounded.answer is bool(feasible)
    if bounded.witness is not None:
        assert _in_report_order(table, bounded.witness) in feasible


def test_the_integer_program_bound_is_exact_on_integers() -> None:
    # One class (1, 1) against totals (3, 1): m = (1, 1) is at L1 distance 0, and any m
    # with m_0 = 3 puts L1 = |1/2 - 3/4|·2 = 1/2, within a bound of exactly 1/2.
    assert solve_l1([(1, 1)], (3, 1), 4, F(1, 2)) == (3, 1)
    assert solve_l1([(1, 1)], (3, 1), 4, F(499, 1000)) is None
    assert solve_l1([(1, 1)], (3, 1), 2, F(0)) == (1, 1)
    assert solve_l1([(1, 0)], (3, 1), 1, F(0), positive=True) is None


def test_the_local_search_finds_what_the_l2_bounds_alone_miss() -> None:
    """From the whole table (largest L2 distance √22/9 ≈ 0.52) to a set within ½ of all."""
    report = closeness(NINE, "System", QUASI, measure("l2"))
    m = _descend(report, report.counts, 6)
    assert sum(m) >= 6
    assert all(0 <= x <= total for x, total in zip(m, report.counts, strict=True))
    assert max(n_closeness(report, 6, F(1, 2)).distances or ()) <= 0.5  # by exhaustive search
    reference = [F(x, sum(m)) for x in m]
    worst = max(
        l2_squared([F(c, group.size) for c in group.counts], reference) for group in report.classes
    )
    assert worst <= F(1, 4)
    bounded = n_closeness(report, 6, F(1, 2), limit=0)
    assert (bounded.answer, bounded.exact, bounded.method) == (True, True, "bounds")
