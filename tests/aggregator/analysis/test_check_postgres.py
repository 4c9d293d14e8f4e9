"""``deniable-aggregator check`` on PostgreSQL: per-batch tally rows summed, one snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import psycopg
import pytest

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.storage import StorageError, Tally
from deniable.aggregator.storage.postgres import SCHEMA_VERSION, PostgresReader
from tests._postgres import Cluster
from tests.aggregator.analysis._check_data import SPECS, expected_sums, question, reports
from tests.aggregator.storage._filled import daemon, fill, listed
from tests.conftest import RunCli


def test_a_database_filled_by_its_daemon_passes_and_a_tampered_tally_row_is_named(
    postgres_url: str, run_cli: RunCli
) -> None:
    filled = fill(postgres_url, enrollment=False)
    kinds, stepped, _ = filled.surveys
    done = run_cli(
        "deniable-aggregator", "check", "--json", env={"DENIABLE_AGGREGATOR_DB": postgres_url}
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["ok"] is True
    assert document["database"] == postgres_url
    assert [s["survey_id"] for s in document["surveys"]] == [s.id for s in filled.surveys]
    found = {
        (s["survey_id"], q["question_id"]): q for s in document["surveys"] for q in s["questions"]
    }
    assert len(found) == 5
    for key in ((kinds.id, "yesno"), (kinds.id, "grr"), (kinds.id, "laplace")):
        assert found[key]["n_stored"] == found[key]["n_recomputed"] == 30, key
    assert found[stepped.id, "q1"]["n_stored"] == 21  # its release (14) is a commit's tally
    with psycopg.connect(postgres_url, autocommit=True) as db:  # one more tally row for grr
        db.execute(
            "INSERT INTO tallies (survey_id, question_id, batch, n, sums) "
            "VALUES (%s, 'grr', nextval('tally_batches'), 1, '{0,1,0,0}')",
            (kinds.id,),
        )
    before = listed(postgres_url)
    done = run_cli("deniable-aggregator", "check", "--db", postgres_url)
    assert done.returncode == 1, done.stderr
    mismatches = [line for line in done.stdout.splitlines() if line.startswith("MISMATCH")]
    grr = expected_sums("grr", filled.sent[kinds.id, "grr"])  # computed here, from the reports
    stored = [grr[0], grr[1] + 1, *grr[2:]]
    assert mismatches == [
        f"MISMATCH survey {kinds.id} question grr: n stored 31, recomputed 30; "
        f"sums stored {stored}, recomputed {grr}"
    ]
    assert done.stdout.splitlines()[-1].startswith("FAILED: 3 surveys, 5 questions")
    assert listed(postgres_url) == before  # check wrote nothing


@pytest.mark.parametrize("case", ["unreachable", "not-deniable", "newer-schema"])
def test_unusable_databases_exit_2_with_one_line(
    postgres_url: str, postgres_cluster: Cluster, run_cli: RunCli, case: str
) -> None:
    host = f"127.0.0.1:{postgres_cluster.port}"
    url = postgres_url.replace("postgres@", "postgres:s3cret@")  # trust auth ignores it
    if case == "unreachable":
        url = "postgresql://postgres:s3cret@127.0.0.1:1/x"
    elif case == "newer-schema":
        with psycopg.connect(postgres_url, autocommit=True) as db:
            db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            db.execute("INSERT INTO schema_version VALUES (99)")
    shown = url.replace(":s3cret", "")
    done = run_cli("deniable-aggregator", "check", "--db", url, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "s3cret" not in line
    expected = {
        "unreachable": f"Error: cannot open PostgreSQL database '{shown}': connection failed",
        "not-deniable": f"Error: '{shown}' is not a deniable aggregator database "
        "(no schema_version table)",
        "newer-schema": f"Error: '{shown}' has schema version 99, newer than this deniable's "
        f"{SCHEMA_VERSION}; upgrade deniable",
    }[case]
    assert line.startswith(expected), line
    if case != "unreachable":
        assert host in line
        with psycopg.connect(postgres_url) as db:  # nothing was created
            tables = db.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == ((1,) if case == "newer-schema" else (0,))


class CommitBetweenReads:
    """A log source that has a daemon commit a batch right after the tallies are read."""

    def __init__(self, reader: PostgresReader, commit: Callable[[], None]) -> None:
        self.reader = reader
        self.commit = commit

    def surveys(self) -> list[tuple[str, int, bytes]]:
        return self.reader.surveys()

    def tallies(self) -> dict[tuple[str, str], Tally]:
        tallies = self.reader.tallies()
        self.commit()
        return tallies

    def releases(self) -> dict[tuple[str, str], Tally]:
        return self.reader.releases()

    def log(self, survey_id: str) -> Iterator[tuple[int, bytes]]:
        return self.reader.log(survey_id)


def test_tallies_and_log_are_read_in_one_snapshot_while_a_daemon_commits(
    postgres_url: str,
) -> None:
    with daemon(postgres_url) as client, PostgresReader(postgres_url) as reader:
        survey = client.create_survey("Snapshot", [question("yesno", SPECS["yesno"])])
        client.submit_reports(reports(survey, "yesno", 50, 1))
        later = iter([reports(survey, "yesno", 30, seed) for seed in (2, 3)])

        def commit() -> None:
            assert client.submit_reports(next(later)).stored == 30

        with reader.snapshot():
            inside = check(CommitBetweenReads(reader, commit))
        with reader.snapshot():  # the next snapshot sees the batch committed meanwhile
            after = reader.tallies()[survey.id, "yesno"].n
            rows = len(list(reader.log(survey.id)))
        with (
            pytest.raises(StorageError, match="read-only transaction"),
            reader.snapshot(),
        ):
            reader._db.execute("CREATE TABLE written (i INTEGER)")  # it cannot write
    assert inside.ok  # read committed instead, the log would hold 30 more reports
    assert inside.surveys[0].questions[0].recomputed.n == 50
    assert (after, rows) == (80, 2)
