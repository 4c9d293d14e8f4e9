"""Attack: the documented way to answer leaves the true answer in the command line."""

# Issue 33, item 6. Whatever is on a command line is in the shell's history and, while the
# process runs, in /proc/PID/cmdline, which any local user can read (ps). README.md's
# first answer was `--answer cheated=yes`: the true answer left behind on the device.

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from deniable.aggregator.server._lifecycle import RunningServer
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli, binary_question
from tests.e2e._terminal import on_terminal

README = Path(__file__).parents[2] / "README.md"
TRUE_ANSWER = re.compile(r"\b(cheated|copied)=")


@pytest.fixture
def survey(admin: AggregatorClient) -> pb.Survey:
    return admin.create_survey(
        "Exam honesty", [binary_question("cheated"), binary_question("copied")]
    )


def _first_documented_answer() -> str:
    """README's command under "A participant answers": what a participant types."""
    section = README.read_text(encoding="utf-8").split("**A participant answers**", 1)[1]
    return next(line[2:] for line in section.splitlines() if line.startswith("$ deniable answer"))


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    return env | {"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}


def test_the_documented_way_to_answer_leaves_no_true_answer_in_the_command_line(
    server: RunningServer, survey: pb.Survey, tmp_path: Path
) -> None:
    typed = _first_documented_answer()
    # The shell's history holds the line as typed.
    assert not TRUE_ANSWER.search(typed), f"README.md has participants type {typed!r}"
    words = shlex.split(typed)
    words[words.index("--server") + 1] = server.address
    words = [survey.id if re.fullmatch(r"[0-9a-f]{16}", w) else w for w in words]
    seen: list[str] = []

    def read_command_line(pid: int) -> None:  # what `ps` shows any local user
        seen.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())

    code, shown = on_terminal(
        words[0], words[1:], _environment(tmp_path), ["yes", "no", "y"],
        at_prompt=read_command_line,
    )  # fmt: skip
    assert code == 0, shown
    assert "Sent 2 randomized answers; the server stored 2." in shown
    assert seen, "no prompt: the answers were given on the command line"
    assert not TRUE_ANSWER.search(seen[0]), seen[0]


def test_answer_typed_at_a_terminal_is_warned_about(
    server: RunningServer, survey: pb.Survey, tmp_path: Path, run_cli: RunCli
) -> None:
    args = ["answer", "--server", server.address, survey.id, "--answer", "cheated=yes",
            "--answer", "copied=no", "--yes", "--dry-run"]  # fmt: skip
    code, shown = on_terminal("deniable", args, _environment(tmp_path))
    assert code == 0, shown
    warning = shown.splitlines()[0]
    assert warning.startswith("Warning: --answer puts your true answers in your shell history")
    assert "/proc/PID/cmdline" in warning
    scripted = run_cli("deniable", *args)  # not a terminal: a script, no warning
    assert scripted.returncode == 0, scripted.stderr
    assert "Warning" not in scripted.stderr + scripted.stdout
