"""``migrate --from --to``: a progress bar of the reports on a terminal, quiet elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.aggregator.cli._terminal import last_drawn, on_terminal
from tests.aggregator.storage._filled import fill, listed
from tests.conftest import RunCli
from tests.e2e._forks import Runner

REPORTS = 125  # what fill() stores: 4 surveys, 11 log rows


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('source') / 'source.db'}"
    fill(url, enrollment=True)
    return url


def test_on_a_terminal_a_bar_of_the_reports_ends_at_their_total(
    cli_runner: Runner, source: str, tmp_path: Path
) -> None:
    target = f"sqlite:///{tmp_path / 'target.db'}"
    done = on_terminal(
        cli_runner, "deniable-aggregator", "migrate", "--from", source, "--to", target
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"copied 4 surveys, {REPORTS} reports in 11 log rows")
    last = last_drawn(done.stderr)
    assert "copying" in last
    assert f"{REPORTS}/{REPORTS}" in last
    assert "100%" in last
    assert "reports/s" in last
    assert "survey 1/4" not in done.stderr  # the bar replaces the lines per survey
    assert listed(target) == listed(source)


def test_off_a_terminal_stderr_is_empty_and_json_is_one_document(
    run_cli: RunCli, source: str, tmp_path: Path
) -> None:
    into_json = f"sqlite:///{tmp_path / 'json.db'}"
    done = run_cli("deniable-aggregator", "migrate", "--from", source, "--to", into_json, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == {  # exactly one document: anything more fails to parse
        "source": source, "target": str(tmp_path / "json.db"), "surveys": 4, "log_rows": 11,
        "reports": REPORTS, "tokens": 2, "bindings": 2,
    }  # fmt: skip
    into_text = tmp_path / "text.db"
    done = run_cli(
        "deniable-aggregator", "migrate", "--from", source, "--to", f"sqlite:///{into_text}"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == (
        f"copied 4 surveys, {REPORTS} reports in 11 log rows, 2 tokens and 2 token answers "
        f"from {source.removeprefix('sqlite:///')} to {into_text}\n"
    )


def test_a_refused_copy_on_a_terminal_ends_the_bar_before_its_one_line_error(
    cli_runner: Runner, source: str, tmp_path: Path
) -> None:
    target = tmp_path / "target.db"
    fill(f"sqlite:///{target}", enrollment=False)  # not empty: refused, exit 1
    before = listed(f"sqlite:///{target}")
    done = on_terminal(
        cli_runner,
        "deniable-aggregator",
        "migrate",
        "--from",
        source,
        "--to",
        f"sqlite:///{target}",
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "Error:" in line]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("Error: the target")
    assert "is not empty" in errors[0]
    assert "Traceback" not in done.stderr
    assert listed(f"sqlite:///{target}") == before
    assert not Path(f"{target}.migrating").exists()
