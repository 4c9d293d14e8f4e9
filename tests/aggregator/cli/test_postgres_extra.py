"""Without the postgres extra, every command given a postgresql:// URL says what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deniable.aggregator.storage import POSTGRES_EXTRA

# The aggregator's entry point, run with psycopg and its pool made unimportable.
WITHOUT_PSYCOPG = (
    "import sys\n"
    "sys.modules['psycopg'] = sys.modules['psycopg_pool'] = None\n"
    "from deniable.aggregator.cli import main\n"
    "sys.argv[0] = 'deniable-aggregator'\n"
    "main()\n"
)
URL = "postgresql://alice:s3cret@127.0.0.1:1/survey"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["serve", "--db", URL, "--listen", "127.0.0.1:0"], 1),
        (["migrate", "--db", URL], 2),
        (["migrate", "--from", "sqlite:///{tmp}/a.db", "--to", URL], 2),
        (["check", "--db", URL], 2),
    ],
)
def test_a_postgresql_url_without_the_extra_is_one_line_naming_it(
    tmp_path: Path, args: list[str], code: int
) -> None:
    if "--from" in args:  # a real source, so that the target is what fails
        from deniable.aggregator.storage import open_storage

        open_storage(f"sqlite:///{tmp_path}/a.db").close()
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, *argv],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"Error: {POSTGRES_EXTRA}", done.stderr
    assert "Traceback" not in done.stderr
