"""A custodian serves a PostgreSQL table (queries pushed down), its ledger in PostgreSQL too."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from tests.e2e.curator._daemon import answer, start_curator

DEPTS = ("HR", "IT", "Sales")


def _fill(url: str, people: int = 200) -> tuple[int, int]:
    """A staff table (person p has 1 + p % 4 rows); (rows, rows of HR aged >= 40, K = 1)."""
    import psycopg

    rows = []
    for person in range(people):
        for row in range(1 + person % 4):
            rows.append((person, 20 + (person * 5 + row) % 45, DEPTS[(person + row) % 3],
                         1000.0 + 7 * ((person + row) % 100)))  # fmt: skip
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE SCHEMA hr")
        db.execute(
            "CREATE TABLE hr.staff (pid integer, age integer, dept text, salary double precision)"
        )
        with db.cursor() as cursor:
            cursor.executemany("INSERT INTO hr.staff VALUES (%s, %s, %s, %s)", rows)
    persons_hr_40 = len({p for p, age, dept, _ in rows if dept == "HR" and age >= 40})
    return len(rows), persons_hr_40


def test_a_postgresql_table_is_queried_in_place_until_the_budget_refuses(
    tmp_path: Path, postgres_url: str
) -> None:
    _, persons = _fill(postgres_url)
    daemon = start_curator(
        tmp_path, postgres_url,
        ["--table", "hr.staff", "--dataset", "staff", "--privacy-unit", "pid",
         "--budget", "2", "--delta", "1e-5"],
        db_url=postgres_url,
    )  # fmt: skip
    try:
        token = daemon.issue(tmp_path, "alice", "2", "1e-5")
        count = answer(daemon.run("count", "--where", "dept = 'HR' AND age >= 40",
                                  "--epsilon", "1", "--json", token_file=token))  # fmt: skip
        # K = 1: each person counts once; the noise is discrete Laplace of scale 1.
        assert count["interval"]["low"] <= count["released"] <= count["interval"]["high"]
        assert abs(count["released"] - persons) <= 40  # P(|Z| > 40) = 2e^-41/(1+e^-1) at ε=1
        hist = answer(daemon.run("histogram", "--column", "dept", "--values", "HR,IT,Sales",
                                 "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
        assert len(hist["bins"]) == 3
        keys = answer(daemon.run("histogram", "--column", "dept", "--delta", "1e-6",
                                 "--epsilon", "0.125", "--json", token_file=token))  # fmt: skip
        assert [b["value"] for b in keys["bins"]] == sorted(b["value"] for b in keys["bins"])
        assert {b["value"] for b in keys["bins"]} <= set(DEPTS)
        release = answer(daemon.run("release", "--columns", "dept", "--values", "dept=HR,IT,Sales",
                                    "--epsilon", "0.125", "--json", token_file=token))  # fmt: skip
        again = answer(daemon.run("histogram", "--column", "dept", "--from-release",
                                  release["release_id"], "--json", token_file=token))  # fmt: skip
        assert [b["released"] for b in again["bins"]] == [c["count"] for c in release["cells"]]
        preview = answer(daemon.run("mean", "--column", "salary", "--min", "1000", "--max",
                                    "1700", "--epsilon", "0.25", "--preview", "--json",
                                    token_file=token))  # fmt: skip
        assert preview["privacy"]["spent"] is None
        mean = answer(daemon.run("mean", "--column", "salary", "--min", "1000", "--max", "1700",
                                 "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
        assert 1000 <= mean["released"] <= 1700
        total = answer(daemon.run("sum", "--column", "age", "--min", "0", "--max", "100",
                                  "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
        assert total["interval"]["low"] <= total["released"] <= total["interval"]["high"]
        refused = daemon.run("count", "--epsilon", "0.5", token_file=token)
        assert refused.returncode == 5, refused.stderr
        ledger = answer(daemon.run("ledger", "--json", token_file=token))
        assert Fraction(ledger["balance"]["epsilon_spent_exact"]) == 2
    finally:
        daemon.stop()
