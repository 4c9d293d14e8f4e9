"""Every command, given bad input, ends in one ``Error:`` line and its exit code: no traceback.

The option cases are generated from the commands themselves (each option that takes a
value gets values of the wrong kind, each file option files it cannot use); the cases that
need a command's own meaning are listed, and a test checks that every command has some.
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from deniable.aggregator import cli as aggregator_cli
from deniable.client import cli as participant_cli
from deniable.shared._cli import run
from tests.aggregator.central.curator.ledger._old_ledger import Ledger as OldLedger
from tests.conftest import ADMIN_TOKEN, BIN
from tests.e2e._forks import Runner

PROGRAMS = {"deniable": participant_cli.cli, "deniable-aggregator": aggregator_cli.cli}
SPEC = {"title": "T", "questions": [{"id": "q", "text": "t", "type": "binary", "epsilon": 1}]}
# Nothing listens on port 9 (discard): a command that got past its checks exits 3.
ENV = {"DENIABLE_AGGREGATOR_ADMIN_TOKEN": ADMIN_TOKEN}


@dataclass(frozen=True)
class Case:
    """One bad invocation: the words, the exit code and a text the error line must hold.

    ``text`` may list alternatives (a tuple): the error must hold one of them, such as the
    option's name or the bad value.
    """

    program: str
    args: tuple[str, ...]
    code: int
    text: str | tuple[str, ...]

    def __str__(self) -> str:
        return " ".join((self.program, *self.args))


def leaf_commands(program: str) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command that runs (not a group), with the words that run it."""
    group = PROGRAMS[program]
    context = click.Context(group, info_name=program)
    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(words: tuple[str, ...], command: click.Command | None) -> None:
        assert command is not None
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk((*words, name), sub)
        else:
            found.append((words, command))

    for name in group.list_commands(context):
        walk((name,), group.get_command(context, name))
    return found


# Valid values for what a command needs, so that the bad value is the one refused.
NEEDS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("answer",): ("--server", "127.0.0.1:9", "s1"),
    ("surveys",): ("--server", "127.0.0.1:9"),
    ("estimate",): ("--server", "127.0.0.1:9", "s1"),
    ("synthesize",): ("--server", "127.0.0.1:9", "s1", "--rows", "10", "--out", "{tmp}/t.csv"),
    ("report",): ("--server", "127.0.0.1:9", "s1", "--out", "{tmp}/r.html"),
    ("export",): ("--server", "127.0.0.1:9", "s1", "--what", "reports", "--out", "{tmp}/e.csv"),
    ("survey", "create"): ("--server", "127.0.0.1:9", "{spec}"),
    ("survey", "list"): ("--server", "127.0.0.1:9"),
    ("survey", "show"): ("--server", "127.0.0.1:9", "s1"),
    ("survey", "close"): ("--server", "127.0.0.1:9", "s1"),
    ("survey", "tokens"): ("--server", "127.0.0.1:9", "s1", "--count", "2"),
    ("simulate",): (
        "--participants",
        "10",
        "--p",
        "0.3",
        "--alpha",
        "0.5",
        "--server",
        "127.0.0.1:9",
    ),
    ("plan",): ("--alpha", "0.5", "--margin", "0.1"),
    ("closeness",): ("{csv}", "--sensitive", "s", "--quasi", "q"),
    ("serve",): ("--listen", "127.0.0.1:0", "--db", "sqlite:///{db}"),
    **{
        ("curate", name): (
            "{staff}",
            *extra,
            "--epsilon",
            "0.5",
            "--budget",
            "1000",
            "--db",
            "sqlite:///{tmp}/curator.db",
        )
        for name, extra in (
            ("count", ()),
            ("histogram", ("--column", "dept", "--values", "HR,IT")),
            ("sum", ("--column", "age", "--min", "0", "--max", "100")),
            ("mean", ("--column", "age", "--min", "0", "--max", "100")),
            ("release", ("--columns", "dept", "--values", "dept=HR,IT")),
        )
    },
    ("curate", "ledger"): ("{staff}", "--db", "sqlite:///{tmp}/curator.db"),
    ("curate", "describe"): ("{staff}", "--db", "sqlite:///{tmp}/curator.db"),
    ("curate", "serve"): (
        "--data",
        "{staff}",
        "--listen",
        "127.0.0.1:0",
        "--db",
        "sqlite:///{db}",
        "--budget",
        "1",
    ),
    ("curate", "migrate-ledger"): (
        "{old_ledger}",
        "{staff}",
        "--dataset",
        "staff",
        "--db",
        "sqlite:///{tmp}/curator.db",
    ),
    **{
        ("curate", "tokens", name): ("--server", "127.0.0.1:9", *extra)
        for name, extra in (
            ("issue", ("--analyst", "alice", "--budget", "1")),
            ("revoke", ("--analyst", "alice")),
            ("list", ()),
        )
    },
}
FILES = ("utf16", "binary", "missing", "directory")


def generated_cases() -> list[Case]:
    """For each option with a value (shared ones once): values of the wrong kind."""
    cases: list[Case] = []
    seen: set[tuple[str, str]] = set()
    for program in sorted(PROGRAMS):
        for words, command in leaf_commands(program):
            needs = NEEDS.get(words, ())
            for option in command.params:
                if not isinstance(option, click.Option) or option.is_flag:
                    continue
                if (program, str(option.envvar)) in seen:
                    continue
                seen.add((program, str(option.envvar)))
                flag = max(option.opts, key=len)
                for bad in _bad_values(option):
                    cases.append(Case(program, (*words, *needs, flag, bad), 2, (flag, bad)))
    return cases


def _bad_values(option: click.Option) -> list[str]:
    """Values of the wrong kind for the option (its error names the option or the value)."""
    kind = option.type
    if isinstance(kind, click.Path):
        # Written to: a missing file is created (the curator's ledger too).
        kinds: tuple[str, ...] = (
            ("utf16", "directory") if option.name in ("output", "out", "ledger") else FILES
        )
        if option.name == "temp_directory":  # a directory to write into, made if missing
            kinds = ("utf16",)
        return [f"{{{name}}}" for name in kinds]
    if isinstance(kind, click.Choice):
        return ["nope"]
    if isinstance(kind, click.types.IntParamType):
        return ["x", "1e999"]
    if isinstance(kind, click.types.FloatParamType):
        return ["x", "nan"]
    if option.name in ("server", "listen"):
        return ["127.0.0.1:99999", "::1:5"]
    return []  # free text: see LISTED


LISTED = [
    # Spec files: not UTF-8, not JSON, not a spec.
    Case("deniable-aggregator", ("survey", "create", "{utf16}"), 2,
         "{utf16}: not UTF-8 text (byte 0xff at offset 0); it looks like UTF-16"),
    Case("deniable-aggregator", ("survey", "create", "{binary}"), 2,
         "{binary}: not UTF-8 text (byte 0x80 at offset 128)"),
    Case("deniable-aggregator", ("survey", "create", "{empty}"), 2, "{empty}: not valid JSON"),
    Case("deniable-aggregator", ("survey", "create", "{missing}"), 2, "{missing}"),
    Case("deniable-aggregator", ("survey", "create", "{directory}"), 2, "{directory}"),
    Case("deniable-aggregator", ("survey", "create", "{notspec}"), 2, "the spec must be"),
    # Free-text options and arguments.
    Case("deniable-aggregator", ("survey", "tokens", "s1", "--count", "0",
                                 "--output", "{tmp}/no/such/dir/tokens"), 2, "--output"),
    Case("deniable-aggregator", ("survey", "show", "--server", "no-port", "s1"), 2, "no-port"),
    Case("deniable-aggregator", ("survey", "list", "--server", "127.0.0.1:0"), 2, "127.0.0.1:0"),
    Case("deniable-aggregator", ("survey", "close", "--server", "[::1:5", "s1"), 2, "[::1:5"),
    Case("deniable-aggregator", ("estimate", "s1", "--confidence", "1"), 2, "confidence"),
    Case("deniable-aggregator", ("plan", "--epsilon", "1", "--margin", "1e-300"), 2,
         "cannot compute with --epsilon 1 --margin 1e-300: float division by zero"),
    Case("deniable-aggregator", ("plan", "--alpha", "1e-320", "--margin", "0.1"), 2,
         "cannot compute with --alpha"),
    Case("deniable-aggregator", ("plan", "--type", "numeric", "--min", "0", "--max", "1e308",
                                 "--epsilon", "1", "--margin", "0.01"), 2,
         "1e+308 is beyond ±1e+15, the largest magnitude of a numeric question's range"),
    Case("deniable-aggregator", ("plan", "--type", "categorical", "--options", "a",
                                 "--epsilon", "1", "--margin", "0.1"), 2, "'a'"),
    Case("deniable-aggregator", ("simulate", "--participants", "10", "--type", "numeric",
                                 "--min", "0", "--max", "1e308", "--epsilon", "1",
                                 "--distribution", "uniform", "--transport", "inprocess"), 2,
         "1e+308 is beyond ±1e+15"),
    Case("deniable-aggregator", ("simulate", "--participants", "10", "--type", "categorical",
                                 "--options", "3", "--distribution", "a,b",
                                 "--epsilon", "1"), 2, "'a' is not a number"),
    Case("deniable-aggregator", ("simulate", "--participants", "10", "--p", "0.3",
                                 "--alpha", "0.5", "--mechanism", "grr"), 2,
         "--mechanism grr does not apply to --type binary"),
    Case("deniable-aggregator", ("plan", "--epsilon", "nan", "--margin", "0.1"), 2,
         "epsilon must be a finite number > 0, got nan"),
    Case("deniable-aggregator", ("plan", "--epsilon", "1", "--margin", "nan"), 2, "nan"),
    Case("deniable-aggregator", ("plan", "--type", "numeric", "--min", "nan", "--max", "1",
                                 "--epsilon", "1", "--margin", "0.1"), 2, "nan"),
    Case("deniable-aggregator", ("simulate", "--participants", "10", "--type", "numeric",
                                 "--min", "0", "--max", "nan", "--epsilon", "1",
                                 "--distribution", "uniform", "--transport", "inprocess"), 2,
         "nan"),
    Case("deniable-aggregator", ("closeness", "{utf16}", "--sensitive", "s", "--quasi", "q"), 2,
         "{utf16}: not UTF-8 text (byte 0xff at offset 0)"),
    Case("deniable-aggregator", ("closeness", "{binary}", "--sensitive", "s", "--quasi", "q"), 2,
         "{binary}: not UTF-8 text (byte 0x80 at offset 128)"),
    Case("deniable-aggregator", ("closeness", "{missing}", "--sensitive", "s", "--quasi", "q"),
         2, "{missing}: cannot read"),
    Case("deniable-aggregator", ("closeness", "{directory}", "--sensitive", "s", "--quasi",
                                 "q"), 2, "{directory}: cannot read"),
    Case("deniable-aggregator", ("closeness", "{csv}", "--sensitive", "s", "--quasi", "q",
                                 "--epsilon", "nan"), 2, "epsilon 'nan' is not a number"),
    Case("deniable-aggregator", ("check", "--db", "sqlite:///{binary}"), 2, "{binary}"),
    Case("deniable-aggregator", ("check", "--db", "sqlite:///{empty}"), 2, "{empty}"),
    Case("deniable-aggregator", ("check", "--db", "postgres://x/y"), 2, "postgres://x/y"),
    Case("deniable-aggregator", ("migrate", "--db", "sqlite:///{binary}"), 2,
         "cannot upgrade SQLite database '{binary}': file is not a database"),
    Case("deniable-aggregator", ("migrate", "--from", "sqlite:///{binary}", "--to",
                                 "sqlite:///{db}"), 2, "{binary}"),
    Case("deniable-aggregator", ("migrate", "--from", "sqlite:///{db}"), 2,
         "--from and --to go together"),
    Case("deniable-aggregator", ("serve", "--listen", "127.0.0.1:0",
                                 "--db", "sqlite:///{binary}"), 1, "{binary}"),
    Case("deniable-aggregator", ("serve", "--listen", "127.0.0.1:0", "--db",
                                 "sqlite:///{db}", "--grace", "-1"), 2, "--grace -1.0"),
    Case("deniable-aggregator", ("serve", "--listen", "127.0.0.1:0",
                                 "--db", "sqlite:///{binary}/x.db"), 1,
         "cannot create the database's folder '{binary}'"),
    Case("deniable-aggregator", ("serve", "--listen", "127.0.0.1:0",
                                 "--db", "sqlite:////proc/x.db"), 1,
         "cannot open the database's lock file '/proc/x.db.lock'"),
    Case("deniable", ("answer", "--server", "127.0.0.1:9", "s1", "--token", "é" * 20), 2,
         "--token: not an enrollment token"),
    Case("deniable", ("answer", "--server", "127.0.0.1:9", "s1", "--max-epsilon", "-1"), 2,
         "--max-epsilon: max_epsilon must be a finite number > 0, got -1.0"),
    Case("deniable", ("surveys", "--server", "bad"), 2, "'bad'"),
    Case("deniable", ("explain", "--alpha", "2"), 2, "alpha must be in (0, 1], got 2.0"),
    Case("deniable", ("explain", "--epsilon", "-1"), 2, "epsilon must be a finite number > 0"),
    Case("deniable", ("budget", "--server", "127.0.0.1:99999"), 2, "'127.0.0.1:99999'"),
    Case("deniable", ("budget", "--budget", "inf"), 2, "--budget: budget must be"),
    # The curator: files, columns, types, conditions, values, the old ledger.
    *(Case("deniable-aggregator", ("curate", "count", data, "--epsilon", "1", "--budget", "9",
                                   "--db", "sqlite:///{tmp}/listed.db"), 2, text)
      for data, text in (
          ("{missing_csv}", "no file '{missing_csv}'"),
          ("{directory}", "'{directory}' is a directory"),
          ("{binary_csv}", "--data: cannot read 'binary.csv'"),
          ("{bad_csv}", "--data: cannot read 'bad.csv': Invalid Input Error"),
          ("{spec}", "--data: 'spec' is not a file DuckDB reads here"),
      )),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--where", "agee > 3",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--where: unknown column 'agee'; the columns are: 'name', 'age', 'dept'"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--where", "age > 'x'",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--where: comparison > cannot mix kinds: column 'age' (int) with 'x' (str)"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--where",
                                 "read_csv('/etc/passwd') IS NULL", "--epsilon", "1",
                                 "--budget", "9"), 2, "read_csv"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--where", "age > 1" + " " * 4100,
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--where: 4,107 characters, at most 4,096"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--types", "age=date",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--types: type of 'age' must be int, float, str or bool, got 'date'"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--types", "dept=int",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "Could not convert string \"HR\""),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--epsilon", "0",
                                 "--budget", "9"), 2, "epsilon must be in [2^-20, 50], got 0.0"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--epsilon", "60",
                                 "--budget", "90"), 2, "epsilon must be in [2^-20, 50], got 60.0"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--epsilon", "1",
                                 "--budget", "inf"), 2, "--budget must be a finite number > 0"),
    Case("deniable-aggregator", ("curate", "count", "{staff}"), 2, "--epsilon is required"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--ledger", "{old_ledger}",
                                 "--epsilon", "1"), 2,
         "curate migrate-ledger {old_ledger} {staff} --dataset staff"),
    Case("deniable-aggregator", ("curate", "count", "{staff}", "--from-release", "{spec}"), 2,
         "--from-release FILE answers without the data"),
    Case("deniable-aggregator", ("curate", "count", "--from-release", "{spec}"), 2,
         "--from-release: {spec} is not a valid release"),
    Case("deniable-aggregator", ("curate", "count", "--from-release", "{binary}"), 2,
         "--from-release: cannot read {binary}"),
    Case("deniable-aggregator", ("curate", "count", "--from-release", "{missing}"), 2,
         "--from-release: no file '{missing}'"),
    Case("deniable-aggregator", ("curate", "count", "--from-release", "{spec}", "--epsilon",
                                 "1"), 2, "--epsilon: not used with --from-release"),
    Case("deniable-aggregator", ("curate", "count", "--server", "127.0.0.1:9", "--epsilon",
                                 "1", "--budget", "5"), 2,
         "--budget: set by the custodian's daemon"),
    Case("deniable-aggregator", ("curate", "count", "--epsilon", "1"), 2,
         "give DATA (a file or postgresql:// URL you hold) or --server HOST:PORT"),
    Case("deniable-aggregator", ("curate", "histogram", "{staff}", "--column", "dept",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--values: list the public values of the column, or give --delta"),
    Case("deniable-aggregator", ("curate", "histogram", "{staff}", "--column", "age",
                                 "--values", "3,x", "--epsilon", "1", "--budget", "9"), 2,
         "--values: column 'age' is int but 'x' is not"),
    Case("deniable-aggregator", ("curate", "histogram", "{staff}", "--column", "salary",
                                 "--values", "1", "--epsilon", "1", "--budget", "9"), 2,
         "--column: unknown column 'salary'; the columns are: 'name', 'age', 'dept'"),
    Case("deniable-aggregator", ("curate", "sum", "{staff}", "--column", "dept", "--min", "0",
                                 "--max", "1", "--epsilon", "1", "--budget", "9"), 2,
         "--column: 'dept' is a str column; a sum needs numbers"),
    Case("deniable-aggregator", ("curate", "sum", "{staff}", "--column", "age", "--min", "0",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--min and --max are required"),
    Case("deniable-aggregator", ("curate", "mean", "{staff}", "--column", "age", "--min", "0",
                                 "--max", "10", "--resolution", "x", "--epsilon", "1",
                                 "--budget", "9"), 2, "--resolution must be a number, got 'x'"),
    Case("deniable-aggregator", ("curate", "mean", "{staff}", "--column", "age", "--min", "0",
                                 "--max", "10", "--resolution", "20", "--epsilon", "1",
                                 "--budget", "9"), 2,
         "--resolution 20.0 is wider than [0.0, 10.0]"),
    Case("deniable-aggregator", ("curate", "release", "{staff}", "--columns", "dept,nope",
                                 "--values", "dept=HR", "--values", "nope=1", "--epsilon", "1",
                                 "--budget", "9"), 2,
         "--columns: no column 'nope' in staff (columns: name, age, dept)"),
    Case("deniable-aggregator", ("curate", "release", "{staff}", "--columns", "dept",
                                 "--epsilon", "1", "--budget", "9"), 2,
         "--values: list the values of 'dept' (--values dept=V1,V2,...)"),
    Case("deniable-aggregator", ("curate", "ledger", "{missing_csv}"), 2,
         "no file '{missing_csv}'"),
    Case("deniable-aggregator", ("curate", "tokens", "revoke", "--server", "127.0.0.1:99999",
                                 "--analyst", "alice"), 2, "127.0.0.1:99999"),
    Case("deniable-aggregator", ("curate", "tokens", "list", "--server", "no-port"), 2,
         "no-port"),
    Case("deniable-aggregator", ("curate", "describe", "--server", "no-port"), 2, "no-port"),
    Case("deniable-aggregator", ("curate", "migrate-ledger", "{staff}", "{staff}",
                                 "--dataset", "staff", "--db", "sqlite:///{tmp}/m.db"), 2,
         "{staff}"),
    Case("deniable-aggregator", ("curate", "serve", "--data", "{staff}", "--listen",
                                 "127.0.0.1:0", "--db", "sqlite:///{db}"), 2,
         "no privacy budget is set for data set 'staff': give --budget E"),
]  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files of the wrong kind, by name, and a valid spec and the folder that holds them."""
    folder = tmp_path_factory.mktemp("bad-input")
    written = {
        "utf16": codecs.BOM_UTF16_LE + json.dumps(SPEC).encode("utf-16-le"),
        "binary": b"".join(bytes([i]) for i in range(128)) + bytes(range(128, 256)),
        "empty": b"",
        "notspec": b"[1, 2]",
        "spec": json.dumps(SPEC).encode(),
        "csv": b"q,s\na,x\n",
        "staff.csv": b"name,age,dept\nann,34,HR\nbob,29,IT\n",
        "bad.csv": b"name,age\nann,34,HR\n",
        "binary.csv": b"".join(bytes([i]) for i in range(128)) + bytes(range(128, 256)),
    }
    for name, data in written.items():
        (folder / name).write_bytes(data)
    (folder / "dir").mkdir()
    paths = {name.replace(".", "_"): str(folder / name) for name in written}
    paths.update(staff=paths.pop("staff_csv"), bad_csv=paths.pop("bad_csv"))
    old = folder / "old-ledger.sqlite"
    OldLedger(old).spend("ab" * 32, 0.5, "count", budget=1.0)
    paths.update(missing=str(folder / "missing"), directory=str(folder / "dir"), tmp=str(folder))
    paths.update(old_ledger=str(old), missing_csv=str(folder / "missing.csv"))
    return paths


CASES = generated_cases() + LISTED


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    started = Runner()
    yield started
    started.close()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input_is_one_line_with_its_exit_code(
    case: Case, files: dict[str, str], runner: Runner, tmp_path: Path
) -> None:
    files = {**files, "db": str(tmp_path / "serve.db")}
    args = [arg.format(**files) for arg in case.args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")} | ENV
    code, stderr = runner.run(case.program, args, env)
    done = subprocess.CompletedProcess([case.program, *args], code, "", stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == case.code, (args, done.returncode, done.stderr)
    error = done.stderr.splitlines()[-1]
    assert error.startswith("Error: "), done.stderr
    texts = (case.text,) if isinstance(case.text, str) else case.text
    assert any(text.format(**files) in error for text in texts), done.stderr
    assert not Path(files["db"]).exists()  # serve refused before opening (creating) it


def test_every_command_has_bad_input_cases() -> None:
    for program in PROGRAMS:
        for words, _ in leaf_commands(program):
            tried = [c for c in CASES if c.program == program and c.args[: len(words)] == words]
            assert tried, (program, words)


def test_a_participant_only_install_names_the_aggregator_extra(tmp_path: Path) -> None:
    """``deniable-aggregator`` without the aggregator extra: one line, the install command.

    A ``sitecustomize`` on PYTHONPATH makes the extra's modules unfindable, as when they are
    not installed; ``deniable`` itself needs none of them.
    """
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import importlib.machinery\n"
        "_find = importlib.machinery.PathFinder.find_spec\n"
        "def _find_installed(name, path=None, target=None):\n"
        "    if name.split('.')[0] in ('scipy', 'grpc_health', 'grpc_reflection'):\n"
        "        return None\n"
        "    return _find(name, path, target)\n"
        "importlib.machinery.PathFinder.find_spec = _find_installed\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["PYTHONPATH"] = str(tmp_path)
    probe = [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('scipy'))"]
    assert subprocess.run(probe, env=env, capture_output=True, text=True).stdout == "None\n"
    for args in (["--help"], ["serve", "--help"], ["plan", "--epsilon", "1", "--margin", "0.1"]):
        done = subprocess.run(
            [str(BIN / "deniable-aggregator"), *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 1, done.stderr
        assert done.stdout == ""
        assert done.stderr == (
            "Error: deniable-aggregator needs scipy, grpcio-health-checking, grpcio-reflection, "
            "which this install lacks (a participant-only install); install the aggregator "
            "with: pip install 'deniable[aggregator]'\n"
        )
    participant = subprocess.run(
        [str(BIN / "deniable"), "explain", "--epsilon", "1"], env=env, capture_output=True
    )
    assert participant.returncode == 0, participant.stderr


def test_an_unexpected_error_is_one_line_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last resort of both tools: a bug is ``Error: unexpected ...``, exit code 1."""

    @click.group()
    def tool() -> None:
        """A tool with a bug."""

    @tool.command()
    @click.argument("count", type=int)
    def divide(count: int) -> None:
        click.echo(1 / count)

    monkeypatch.setattr(sys, "argv", ["tool", "divide", "0"])
    with pytest.raises(SystemExit) as exited:
        run(tool)
    assert exited.value.code == 1
    assert capsys.readouterr().err == (
        "Error: unexpected ZeroDivisionError: division by zero (a bug in deniable: please "
        "report it with the command that caused it)\n"
    )
    monkeypatch.setattr(sys, "argv", ["tool", "divide", "x"])  # click's errors: their code
    with pytest.raises(SystemExit) as exited:
        run(tool)
    assert exited.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
