"""A custodian serves a Parquet file; an analyst with a token runs every query until refused."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from tests.e2e.curator._daemon import CuratorDaemon, answer, curate, start_curator

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DEPTS = ("HR", "IT", "Sales")


def write_staff(path: Path, people: int = 300) -> None:
    """``people`` persons, person p with 1 + p % 5 rows (so K = 2 binds for most)."""
    pid, age, dept, salary = [], [], [], []
    for person in range(people):
        for row in range(1 + person % 5):
            pid.append(person)
            age.append(20 + (person * 7 + row) % 45)
            dept.append(DEPTS[(person + row) % 3])
            salary.append(
                None if (person + row) % 11 == 0 else 1000.0 + 10 * ((person * 3 + row) % 90)
            )
    table = pa.table({"pid": pid, "age": age, "dept": dept, "salary": salary})
    pq.write_table(table, path)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CuratorDaemon]:
    """One daemon for the module: each test issues its own analyst, with its own budget."""
    tmp_path = tmp_path_factory.mktemp("served")
    data = tmp_path / "staff.parquet"
    write_staff(data)
    daemon = start_curator(
        tmp_path, str(data),
        ["--dataset", "staff", "--privacy-unit", "pid", "--max-contributions", "2",
         "--budget", "3", "--delta", "1e-5"],
    )  # fmt: skip
    yield daemon
    daemon.stop()


def test_an_analyst_runs_every_query_kind_until_the_budget_refuses(
    served: CuratorDaemon, tmp_path: Path
) -> None:
    token = served.issue(tmp_path, "alice", "2", "1e-5")
    described = answer(served.run("describe", "--json", token_file=token))
    assert described["privacy_unit"] == "pid"
    assert described["max_contributions"] == 2
    spent = Fraction(0)

    count = answer(served.run("count", "--epsilon", "0.25", "--where", "age >= 30 AND dept = 'HR'",
                              "--json", token_file=token))  # fmt: skip
    assert count["sensitivity"] == 2  # K = 2 rows per unit
    assert count["interval"]["low"] <= count["released"] <= count["interval"]["high"]
    spent += Fraction(1, 4)
    assert Fraction(count["privacy"]["charge"]["epsilon_exact"]) == Fraction(1, 4)

    listed = answer(served.run("histogram", "--column", "dept", "--values", "HR,IT,Sales",
                               "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
    assert [b["value"] for b in listed["bins"]] == list(DEPTS)
    spent += Fraction(1, 4)

    keys = answer(served.run("histogram", "--column", "dept", "--delta", "1e-6",
                             "--epsilon", "0.75", "--json", token_file=token))  # fmt: skip
    assert {b["value"] for b in keys["bins"]} <= set(DEPTS)
    assert keys["threshold"] >= 1
    spent += Fraction(3, 4)

    total = answer(served.run("sum", "--column", "salary", "--min", "0", "--max", "2000",
                              "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
    assert total["interval"]["low"] <= total["released"] <= total["interval"]["high"]
    spent += Fraction(1, 4)

    mean = answer(served.run("mean", "--column", "age", "--min", "18", "--max", "70",
                             "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
    assert 18 <= mean["released"] <= 70
    spent += Fraction(1, 4)

    preview = answer(served.run("count", "--epsilon", "0.25", "--preview", "--json",
                                token_file=token))  # fmt: skip
    assert preview["privacy"]["preview"] is True

    release = answer(served.run("release", "--columns", "dept", "--values", "dept=HR,IT,Sales",
                                "--epsilon", "0.25", "--json", token_file=token))  # fmt: skip
    spent += Fraction(1, 4)
    from_release = answer(served.run("count", "--from-release", release["release_id"], "--where",
                                     "dept = 'IT'", "--json", token_file=token))  # fmt: skip
    assert from_release["privacy"]["post_processing"] is True

    ledger = answer(served.run("ledger", "--json", token_file=token))
    assert Fraction(ledger["balance"]["epsilon_spent_exact"]) == spent == Fraction(2)
    assert len(ledger["spends"]) == 6

    refused = served.run("count", "--epsilon", "0.001", "--json", token_file=token)
    assert refused.returncode == 5, refused.stderr
    assert "nothing was spent" in refused.stderr
    after = answer(served.run("ledger", "--json", token_file=token))
    assert after["spends"] == ledger["spends"]


def test_the_budget_survives_a_restart_and_a_changed_file(tmp_path: Path) -> None:
    """The analyst's adversary move: a fresh budget by a new file or a new ledger path."""
    data = tmp_path / "staff.parquet"
    write_staff(data)
    args = ["--dataset", "staff", "--budget", "1"]
    daemon = start_curator(tmp_path, str(data), args)
    try:
        token = daemon.issue(tmp_path, "bob", "1")
        answer(daemon.run("count", "--epsilon", "1", "--json", token_file=token))
    finally:
        daemon.stop()
    write_staff(data, people=301)  # other bytes, same registered data set
    daemon = start_curator(tmp_path, str(data), args)
    try:
        refused = daemon.run("count", "--epsilon", "0.01", token_file=token)
        assert refused.returncode == 5, refused.stderr
        for option in (["--budget", "5"], ["--db", f"sqlite:///{tmp_path / 'other.db'}"]):
            bypass = daemon.run("count", "--epsilon", "0.01", *option, token_file=token)
            assert bypass.returncode == 2
            assert "set by the custodian's daemon" in bypass.stderr
    finally:
        daemon.stop()


def test_tokens_are_checked_and_revocable(served: CuratorDaemon, tmp_path: Path) -> None:
    token = served.issue(tmp_path, "carol", "1")
    by_variable = {**served.env, "DENIABLE_AGGREGATOR_CURATE_TOKEN": token.read_text().strip()}
    ledger = answer(curate("ledger", "--server", served.address, "--json", env=by_variable))
    assert ledger["balance"]["analyst"] == "carol"
    stranger = tmp_path / "stranger.token"
    stranger.write_text("dnc_" + "x" * 43 + "\n")
    assert served.run("count", "--epsilon", "0.1", token_file=stranger).returncode == 6
    revoke = curate("tokens", "revoke", "--server", served.address, "--admin-token-file",
                    str(served.admin_token_file), "--analyst", "carol", env=served.env)  # fmt: skip
    assert revoke.returncode == 0, revoke.stderr
    assert served.run("count", "--epsilon", "0.1", token_file=token).returncode == 6
    listing = answer(curate("tokens", "list", "--server", served.address, "--admin-token-file",
                            str(served.admin_token_file), "--json", env=served.env))  # fmt: skip
    assert "carol" in listing["revoked"]
    posing = {**served.env, "DENIABLE_AGGREGATOR_CURATE_ADMIN_TOKEN": token.read_text().strip()}
    as_analyst = curate("tokens", "list", "--server", served.address, "--json", env=posing)
    assert as_analyst.returncode == 6


def test_a_filter_that_reads_a_file_is_refused_naming_it(
    served: CuratorDaemon, tmp_path: Path
) -> None:
    token = served.issue(tmp_path, "dave", "1")
    for where, named in (
        ("pid IN (SELECT pid FROM read_csv('/etc/passwd'))", "SELECT"),
        ("read_csv('/etc/passwd') IS NULL", "read_csv"),
        ("getenv('HOME') = ''", "getenv"),
    ):
        done = served.run("count", "--epsilon", "0.1", "--where", where, token_file=token)
        assert done.returncode == 2, (where, done.stderr)
        assert named.lower() in done.stderr.lower(), done.stderr
    ledger = answer(served.run("ledger", "--json", token_file=token))
    assert ledger["spends"] == []


def test_no_seed_reaches_a_daemon(served: CuratorDaemon, tmp_path: Path) -> None:
    token = served.issue(tmp_path, "erin", "1")
    done = served.run("count", "--epsilon", "0.1", "--seed", "1", token_file=token)
    assert done.returncode == 2
    assert "seed" in done.stderr
    assert answer(served.run("ledger", "--json", token_file=token))["spends"] == []
