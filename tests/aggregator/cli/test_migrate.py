"""``deniable-aggregator migrate``: schema upgrades, and copies SQLite <-> PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest

from deniable.aggregator.storage import open_reader, open_storage
from deniable.aggregator.storage.postgres import SCHEMA_VERSION as POSTGRES_VERSION
from deniable.aggregator.storage.sqlite import SCHEMA_VERSION as SQLITE_VERSION
from deniable.client._remote import RemoteError
from tests.aggregator.server.test_release_gate import reports as bits
from tests.aggregator.storage._filled import Filled, daemon, estimates, fill, listed
from tests.conftest import RunCli, binary_question

AGGREGATOR = "deniable-aggregator"


def migrate(run_cli: RunCli, *args: str) -> tuple[int, str, str]:
    done = run_cli(AGGREGATOR, "migrate", *args)
    return done.returncode, done.stdout, done.stderr


def bindings(url: str, filled: Filled) -> list[tuple[bytes, str, str, str, bytes]]:
    with open_reader(url) as reader, reader.snapshot():
        return [b for survey in filled.surveys for b in reader.bindings(survey.id)]


def databases(folder: Path) -> list[str]:
    """The files in ``folder`` but SQLite's companions (-wal, -shm) and lock files."""
    return sorted(
        p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm", ".lock"))
    )


def check_passes(run_cli: RunCli, url: str) -> None:
    done = run_cli(AGGREGATOR, "check", "--db", url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("OK: 4 surveys, 7 questions, 125 reports")


def test_copy_sqlite_to_postgresql_and_back(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    filled = fill(source, enrollment=True)
    want = estimates(source, filled)
    surveys = listed(source)
    assert [s[1:] for s in surveys] == [(1, 90, 0), (1, 21, 0), (2, 12, 0), (1, 2, 2)]

    code, out, err = migrate(run_cli, "--from", source, "--to", postgres_url, "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "source": source,
        "target": postgres_url,
        "surveys": 4,
        "log_rows": 11,
        "reports": 125,
        "tokens": 2,
        "bindings": 2,
    }
    assert err == ""  # off a terminal no progress: stderr holds only errors
    check_passes(run_cli, postgres_url)
    assert listed(postgres_url) == surveys  # ids, creation order, state, counts
    assert estimates(postgres_url, filled) == want  # releases included: stepped n=14 of 21
    assert bindings(postgres_url, filled) == bindings(source, filled)

    back = tmp_path / "back.db"
    code, out, err = migrate(run_cli, "--from", postgres_url, "--to", f"sqlite:///{back}")
    assert code == 0, err
    assert out.startswith("copied 4 surveys, 125 reports in 11 log rows, 2 tokens and 2 token")
    assert not Path(f"{back}.migrating").exists()
    check_passes(run_cli, f"sqlite:///{back}")
    assert listed(f"sqlite:///{back}") == surveys
    assert estimates(f"sqlite:///{back}", filled) == want
    enrolled = filled.surveys[3]
    with daemon(f"sqlite:///{back}") as client:
        again = bits(enrolled, "q1", 1, "again")  # the used token, another report for q1
        with pytest.raises(RemoteError, match="already answered question 'q1'"):
            client.submit_reports(again, enrollment_token=filled.used)
        assert client.submit_reports(again, enrollment_token=filled.unused).stored == 1
        resent = bits(enrolled, "q1", 1, "e1")  # the used token's own report: a resend
        assert client.submit_reports(resent, enrollment_token=filled.used).already_stored == 1


def test_copied_enrollment_binds_tokens_on_postgresql(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    with daemon(source) as client:
        enrolled = client.create_survey(
            "Enrolled", [binary_question("q1")], enrollment_required=True
        )
        used, unused = client.issue_tokens(enrolled.id, 2)
        client.submit_reports(bits(enrolled, "q1", 1, "e1"), enrollment_token=used)
    assert migrate(run_cli, "--from", source, "--to", postgres_url)[0] == 0
    with daemon(postgres_url) as client:
        again = bits(enrolled, "q1", 1, "again")
        assert client.submit_reports(again, enrollment_token=unused).stored == 1
        with pytest.raises(RemoteError, match="already answered question 'q1'"):
            client.submit_reports(bits(enrolled, "q1", 1, "x"), enrollment_token=used)


def test_a_non_empty_target_is_refused_unless_told_and_a_shared_id_always(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    source = tmp_path / "source.db"
    with daemon(f"sqlite:///{source}") as client:
        mine = client.create_survey("Mine", [binary_question("q1")])
        client.submit_reports(bits(mine, "q1", 5, "m"))
    with daemon(postgres_url) as client:
        theirs = client.create_survey("Theirs", [binary_question("q1")])
        client.submit_reports(bits(theirs, "q1", 3, "t"))
    before = listed(postgres_url)

    code, out, err = migrate(run_cli, "--from", f"sqlite:///{source}", "--to", postgres_url)
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"Error: the target {postgres_url} is not empty: it holds 1 survey (first "
        f"{theirs.id!r}); copy into an empty database, or pass --into-non-empty to add the "
        "source's surveys"
    )
    assert listed(postgres_url) == before

    args = ("--from", f"sqlite:///{source}", "--to", postgres_url, "--into-non-empty")
    assert migrate(run_cli, *args)[0] == 0
    after = listed(postgres_url)
    assert after == [*before, (mine.id, 1, 5, 0)]

    code, out, err = migrate(run_cli, *args)  # now the survey is in both
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"Error: survey {mine.id!r} exists in both the source {source} and the target "
        f"{postgres_url}; nothing was copied"
    )
    assert listed(postgres_url) == after

    sqlite_target = tmp_path / "target.db"  # a SQLite target: the file is left as it was
    with daemon(f"sqlite:///{sqlite_target}") as client:
        client.create_survey("Other", [binary_question("q1")])
    content = sqlite_target.read_bytes()
    code, _, err = migrate(run_cli, "--from", postgres_url, "--to", f"sqlite:///{sqlite_target}")
    assert code == 1
    assert f"Error: the target {sqlite_target} is not empty: it holds 1 survey" in err
    assert sqlite_target.read_bytes() == content
    assert databases(tmp_path) == ["source.db", "target.db"]  # no staging file left


def test_replayed_tallies_that_differ_from_the_stored_ones_are_refused(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    source = tmp_path / "source.db"
    with daemon(f"sqlite:///{source}") as client:
        survey = client.create_survey("Mine", [binary_question("q1")])
        client.submit_reports(bits(survey, "q1", 5, "m"))
    with sqlite3.connect(source) as db:
        db.execute("UPDATE tallies SET n = 6")
    db.close()
    code, out, err = migrate(run_cli, "--from", f"sqlite:///{source}", "--to", postgres_url)
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"Error: survey {survey.id!r} question 'q1': the replayed tally (n=5, sums=[3]) "
        f"differs from the source's stored (n=6, sums=[3]); run check on {source}; nothing "
        "was copied"
    )
    assert listed(postgres_url) == []  # rolled back


def test_a_failure_while_writing_the_target_keeps_nothing(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    with daemon(source) as client:
        for title in ("One", "Two"):
            survey = client.create_survey(title, [binary_question("q1")])
            client.submit_reports(bits(survey, "q1", 5, title))
    assert migrate(run_cli, "--db", postgres_url)[0] == 0
    with psycopg.connect(postgres_url, autocommit=True) as db:  # the second log row fails
        db.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF (SELECT count(*) FROM log) > 0 THEN RAISE EXCEPTION 'disk on fire'; END IF; "
            "RETURN NEW; END $$"
        )
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON log FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    code, out, err = migrate(run_cli, "--from", source, "--to", postgres_url)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith(
        f"Error: cannot write PostgreSQL database '{postgres_url}': disk on fire"
    )
    assert err.splitlines()[-1].endswith("nothing was copied")
    assert listed(postgres_url) == []  # the first survey, stored before, was rolled back


@pytest.mark.parametrize("case", ["missing", "unreachable", "not-deniable", "scheme", "same"])
def test_bad_urls_exit_2_naming_them(
    tmp_path: Path, postgres_url: str, run_cli: RunCli, case: str
) -> None:
    good = f"sqlite:///{tmp_path / 'good.db'}"
    open_storage(good).close()
    unreachable = "postgresql://postgres:s3cret@127.0.0.1:1/x"
    source, target, message = {
        "missing": (
            f"sqlite:///{tmp_path / 'missing.db'}",
            postgres_url,
            f"no database file at '{tmp_path / 'missing.db'}'",
        ),
        "unreachable": (
            good,
            unreachable,
            "cannot open PostgreSQL database 'postgresql://postgres@127.0.0.1:1/x': "
            "connection failed",
        ),
        "not-deniable": (
            postgres_url,
            good,
            f"'{postgres_url}' is not a deniable aggregator database (no schema_version table)",
        ),
        "scheme": (good, "mysql://h/x", "unsupported database URL 'mysql://h/x' (scheme 'mysql')"),
        "same": (good, good, f"--from and --to name the same database '{good}'"),
    }[case]
    code, out, err = migrate(run_cli, "--from", source, "--to", target)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith(f"Error: {message}"), err
    assert "s3cret" not in err
    assert databases(tmp_path) == ["good.db"]
    with psycopg.connect(postgres_url) as db:  # nothing created in the database either
        row = db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert row == (0,)


def test_migrate_db_upgrades_the_schema_once(
    tmp_path: Path, postgres_url: str, run_cli: RunCli
) -> None:
    for url, version in (
        (postgres_url, POSTGRES_VERSION),
        (f"sqlite:///{tmp_path / 'a.db'}", SQLITE_VERSION),
    ):
        code, out, err = migrate(run_cli, "--db", url, "--json")
        assert code == 0, err
        shown = url.removeprefix("sqlite:///")
        assert json.loads(out) == {"database": shown, "from_version": 0, "to_version": version}
        code, out, err = migrate(run_cli, "--db", url)
        assert (code, out) == (0, f"{shown}: schema version {version}, already current\n")
        assert listed(url) == []
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("UPDATE schema_version SET version = 99")
    code, out, err = migrate(run_cli, "--db", postgres_url)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"Error: '{postgres_url}': the database has schema version 99, newer than this "
        f"aggregator's {POSTGRES_VERSION}; upgrade deniable"
    ]
