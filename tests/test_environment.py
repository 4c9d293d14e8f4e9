"""Environment variables: one scheme per program, listed in --help, each one taking effect.

The commands are walked, not listed by hand: a new option is covered as soon as it exists.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import click
import pytest
from click.core import ParameterSource

from deniable.aggregator import cli as aggregator_cli
from deniable.client import cli as participant_cli
from deniable.shared._cli import LazyGroup, option_key
from tests.conftest import BIN, RunCli

PROGRAMS = {"deniable": participant_cli.cli, "deniable-aggregator": aggregator_cli.cli}
PREFIXES = {"deniable": "DENIABLE_", "deniable-aggregator": "DENIABLE_AGGREGATOR_"}
HELP_VARIABLE = re.compile(r"\[env\s+var:\s+([A-Z0-9_]+)")


def loaded(program: str) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of ``program`` (groups and subcommands), with the words that run it."""
    group = PROGRAMS[program]
    assert isinstance(group, LazyGroup)
    context = click.Context(group, info_name=program)
    commands: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(words: tuple[str, ...], command: click.Command | None) -> None:
        assert command is not None, words
        commands.append((words, command))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk((*words, name), sub)

    for name in group.list_commands(context):
        walk((name,), group.get_command(context, name))
    return commands


def options(command: click.Command) -> list[click.Option]:
    """The command's own options that take a value (not --help)."""
    return [p for p in command.params if isinstance(p, click.Option) and p.expose_value]


def variables(program: str) -> dict[str, list[tuple[tuple[str, ...], click.Option]]]:
    """Each variable ``program`` reads, with the options that read it."""
    found: dict[str, list[tuple[tuple[str, ...], click.Option]]] = {}
    for words, command in loaded(program):
        for option in options(command):
            assert isinstance(option.envvar, str), (words, option.name, option.envvar)
            found.setdefault(option.envvar, []).append((words, option))
    return found


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_option_has_one_variable_of_its_program_listed_in_its_help(
    program: str, run_cli: RunCli
) -> None:
    for words, command in loaded(program):
        done = run_cli(program, *words, "--help")
        assert done.returncode == 0, done.stderr
        listed = HELP_VARIABLE.findall(done.stdout)
        own = options(command)
        assert sorted(listed) == sorted(str(option.envvar) for option in own), words
        for option in own:
            assert str(option.envvar).startswith(PREFIXES[program]), (words, option.envvar)
            if program == "deniable":
                assert not str(option.envvar).startswith("DENIABLE_AGGREGATOR_")


def test_the_daemon_and_the_participant_read_no_variable_of_the_other() -> None:
    participant, aggregator = variables("deniable"), variables("deniable-aggregator")
    assert participant
    assert aggregator
    assert not set(participant) & set(aggregator)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_a_variable_shared_by_commands_means_the_same_option(program: str) -> None:
    for envvar, options in variables(program).items():
        assert len({option_key(option) for _, option in options}) == 1, envvar


def _sample(option: click.Option, tmp_path: Path) -> tuple[str, Any]:
    """A value for the option's variable, different from its default, and what it parses to."""
    kind = option.type
    if option.is_flag or isinstance(kind, click.types.BoolParamType):
        return "1", True
    if option.name in ("server",):
        return "127.0.0.1:5", "127.0.0.1:5"
    if option.name in ("listen", "web"):
        return "127.0.0.1:5", "127.0.0.1:5"
    if option.multiple:
        return "q1=yes q2=no", ("q1=yes", "q2=no")
    if isinstance(kind, click.Choice):
        choice = str(kind.choices[-1])
        return choice, choice
    if isinstance(kind, click.types.IntParamType):
        return "7", 7
    if isinstance(kind, click.types.FloatParamType):
        return "0.25", 0.25
    if isinstance(kind, click.Path):
        path = tmp_path / f"file-{option.name}"
        if kind.file_okay:
            path.write_text("x\n")
        else:  # a directory option
            path.mkdir(exist_ok=True)
        return str(path), path
    assert isinstance(kind, click.types.StringParamType), (option.name, kind)
    return f"value-{option.name}", f"value-{option.name}"


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_documented_variable_takes_effect(
    program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text("{}")
    checked = 0
    for words, command in loaded(program):
        if isinstance(command, click.Group):
            continue
        own = options(command)
        expected: dict[str, Any] = {}
        for option in own:
            text, value = _sample(option, tmp_path)
            monkeypatch.setenv(str(option.envvar), text)
            expected[str(option.name)] = value
        arguments = [
            str(spec)
            if isinstance(p.type, click.File) or (isinstance(p.type, click.Path) and p.type.exists)
            else "s1"
            for p in command.params
            if isinstance(p, click.Argument)
        ]
        with command.make_context(" ".join(words), arguments) as context:
            for option in own:
                name = str(option.name)
                assert context.get_parameter_source(name) == ParameterSource.ENVIRONMENT, name
                value = context.params[name]
                shown = str(value) if name in ("server", "listen", "web") else value
                assert shown == expected[name], (words, name, value)
                checked += 1
        for option in own:
            monkeypatch.delenv(str(option.envvar))
    assert checked >= 20


# --- through the console scripts ------------------------------------------------------


def test_check_reads_its_database_from_the_aggregator_variable(
    run_cli: RunCli, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.db"
    done = run_cli(
        "deniable-aggregator", "check", env={"DENIABLE_AGGREGATOR_DB": f"sqlite:///{missing}"}
    )
    assert done.returncode == 2
    assert done.stderr == f"Error: no database file at {str(missing)!r}\n"


def test_a_retired_name_is_ignored_with_a_warning_naming_the_new_one(
    run_cli: RunCli, tmp_path: Path
) -> None:
    old = tmp_path / "old.db"
    done = run_cli("deniable-aggregator", "check", env={"DENIABLE_DB": f"sqlite:///{old}"})
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "Warning: DENIABLE_DB is set but ignored: deniable-aggregator reads "
        "DENIABLE_AGGREGATOR_DB instead"
    )
    assert str(old) not in done.stderr  # the default database was used instead
    assert done.returncode == 2
    participant = run_cli("deniable", "budget", "--json", env={"DENIABLE_BUDGET_BUDGET": "4.5"})
    assert participant.returncode == 0, participant.stderr
    assert participant.stderr.startswith(
        "Warning: DENIABLE_BUDGET_BUDGET is set but ignored: deniable reads DENIABLE_BUDGET "
        "instead\n"
    )
    assert json.loads(participant.stdout)["policy"]["sources"]["budget"] == "default"


def test_the_daemon_ignores_the_participants_tls_variables(tmp_path: Path) -> None:
    """``DENIABLE_TLS_CERT``/``_KEY`` are the participant's client certificate, not serve's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["DENIABLE_TLS_CERT"] = str(tmp_path / "client.crt")  # missing files: if serve read
    env["DENIABLE_TLS_KEY"] = str(tmp_path / "client.key")  # them it could not start
    env["DENIABLE_AGGREGATOR_SERVE_LISTEN"] = "127.0.0.1:0"
    env["DENIABLE_AGGREGATOR_DB"] = f"sqlite:///{tmp_path / 'env.db'}"
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "serve", "--grace", "1"],
            stdout=subprocess.DEVNULL, stderr=stderr, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        records: list[dict[str, Any]] = []
        while time.monotonic() < deadline and process.poll() is None:
            records = [json.loads(line) for line in log.read_text().splitlines()]
            if any(r["event"] == "listening" for r in records):
                break
            time.sleep(0.05)
        listening = [r for r in records if r["event"] == "listening"]
        assert listening, log.read_text()
        assert listening[0]["tls"] == "off"
        assert listening[0]["db"] == env["DENIABLE_AGGREGATOR_DB"]
        assert listening[0]["address"].startswith("127.0.0.1:")
        warnings = [r["event"] for r in records if r["level"] == "warning"]
        assert warnings == [
            "DENIABLE_TLS_CERT is set but ignored: deniable-aggregator reads "
            "DENIABLE_AGGREGATOR_SERVE_TLS_CERT instead",
            "DENIABLE_TLS_KEY is set but ignored: deniable-aggregator reads "
            "DENIABLE_AGGREGATOR_SERVE_TLS_KEY instead",
        ]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_the_participant_ignores_the_aggregators_variables(run_cli: RunCli) -> None:
    done = run_cli("deniable", "surveys", env={"DENIABLE_AGGREGATOR_SERVER": "127.0.0.1:9"})
    assert done.returncode == 2
    assert "Missing option '--server'" in done.stderr
