"""Runs many command-line invocations fast: both tools imported once, a fork per invocation.

Started as a subprocess by tests. Each line on stdin is a JSON object ``{"program",
"args", "env"}`` (optionally ``"cwd"`` and ``"capture"``); for each, a forked child runs the
program's console-script entry point with those arguments and environment, and one JSON
line ``{"code", "stderr"}`` answers on stdout. ``capture`` says what ``stderr`` holds:
``"stderr"`` (the default; stdout is discarded), ``"stdout"`` (stderr is discarded) or
``"both"`` (both streams interleaved as on a terminal: stdout is line-buffered) or
``"separate"`` (``stdout`` and ``stderr`` each in its own field) or ``"terminal"`` (as
``"separate"``, but stderr is a pseudo-terminal: ``stderr`` holds what it showed);
``"input"`` is fed to the child's stdin (else /dev/null). A child is a real process with a
real exit code, as from a shell, without the ~0.3 s of starting Python and importing.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pty
import sys
import tempfile
from collections.abc import Callable

import click

from deniable.aggregator import cli as aggregator_cli
from deniable.client import cli as participant_cli

ENTRY_POINTS: dict[str, Callable[[], None]] = {
    "deniable": participant_cli.main,
    "deniable-aggregator": aggregator_cli.main,
}


def preload(group: click.Group, name: str) -> None:
    """Import every command of a lazily loaded tool now, once, before any fork."""
    context = click.Context(group, info_name=name)
    for command_name in group.list_commands(context):
        command = group.get_command(context, command_name)
        if isinstance(command, click.Group):
            preload(command, command_name)


def child(
    program: str, args: list[str], env: dict[str, str], captured_fd: int, capture: str
) -> None:
    """In the forked child: run the tool as its console script would, then exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(captured_fd if capture in ("stderr", "both", "separate") else devnull, 2)
    if capture != "separate":  # else stdout is already the caller's file
        os.dup2(captured_fd if capture in ("stdout", "both") else devnull, 1)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [program, *args]
    code = 0
    try:
        ENTRY_POINTS[program]()
    except SystemExit as exit_:
        if isinstance(exit_.code, int):
            code = exit_.code
        elif exit_.code is not None:  # sys.exit("message"), as Python itself reports it
            print(exit_.code, file=sys.stderr)
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def separate(case: dict[str, object]) -> dict[str, object]:
    """Run one invocation with stdin, stdout and stderr each a file of its own."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with tempfile.TemporaryFile() as given:
            given.write(str(case.get("input") or "").encode("utf-8"))
            given.flush()
            given.seek(0)
            pid = os.fork()
            if pid == 0:
                if "cwd" in case:
                    os.chdir(str(case["cwd"]))
                os.dup2(given.fileno(), 0)
                sys.stdin = os.fdopen(0, "r", closefd=False)  # not the runner's buffered input
                os.dup2(out.fileno(), 1)
                program, args, env = str(case["program"]), case["args"], case["env"]
                child(program, list(args), dict(env), err.fileno(), "separate")  # type: ignore[call-overload]
            _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "code": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }


def terminal(case: dict[str, object]) -> dict[str, object]:
    """Run one invocation with stderr a pseudo-terminal, stdout a file and stdin empty."""
    leader, follower = pty.openpty()
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            os.close(leader)
            if "cwd" in case:
                os.chdir(str(case["cwd"]))
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out.fileno(), 1)
            program, args, env = str(case["program"]), case["args"], case["env"]
            child(program, list(args), dict(env), follower, "separate")  # type: ignore[call-overload]
        os.close(follower)
        shown = b""
        while len(shown) < 2**24:  # read until the child's end closes (EIO on Linux)
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        os.close(leader)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        return {
            "code": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": shown.decode("utf-8", "replace"),
        }


def main() -> None:
    """Answer each invocation on stdin with its exit code and stderr."""
    preload(participant_cli.cli, "deniable")
    preload(aggregator_cli.cli, "deniable-aggregator")
    with contextlib.suppress(ImportError):  # --db postgresql://: the postgres extra (0.3 s)
        importlib.import_module("deniable.aggregator.storage.postgres")
    for line in sys.stdin:
        case = json.loads(line)
        if case.get("capture") in ("separate", "terminal"):
            run = separate if case["capture"] == "separate" else terminal
            print(json.dumps(run(case)), flush=True)
            continue
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            if "cwd" in case:
                os.chdir(case["cwd"])
            capture = case.get("capture", "stderr")
            child(case["program"], case["args"], case["env"], write_end, capture)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            stderr = pipe.read().decode("utf-8", "replace")
        _, status = os.waitpid(pid, 0)
        answer = {"code": os.waitstatus_to_exitcode(status), "stderr": stderr}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
