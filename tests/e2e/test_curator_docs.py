"""docs/curator.md's worked examples run as shown: the table script, each command, each output.

The noise of an unseeded query is fresh on each run: its figures are masked, and the width
of its interval, which does not depend on the noise, is compared (except a mean's).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import RunCli

DOC = Path(__file__).parents[2] / "docs" / "curator.md"
FILES = ("curator.db", "release.json", "staff.csv")
RELEASE_ID = re.compile(r"\br-[0-9a-f]{12}\b")
CELL = re.compile(r"^(  [^:]+, [^:]+: )-?\d+$")
INTERVAL = re.compile(r"^(  (?:\w+: )?)(-?[\d.]+), (\d+% interval) \[(-?[\d.]+), (-?[\d.]+)\](.*)$")


def _examples() -> tuple[str, list[tuple[str, list[str], int]]]:
    """The table's script, and each ``$`` command of the section with its output and code."""
    section = DOC.read_text(encoding="utf-8").split("## Worked examples", 1)[1].split("\n## ")[0]
    script = section.split("```python\n", 1)[1].split("```", 1)[0]
    commands: list[tuple[str, list[str], int]] = []
    for block in re.findall(r"```console\n(.*?)```", section, re.DOTALL):
        echo = False
        for line in block.splitlines():
            if line == "$ echo $?":
                echo = True
            elif echo:  # the exit code of the command before
                text, output, _ = commands[-1]
                commands[-1] = (text, output, int(line))
                echo = False
            elif line.startswith("$ "):
                commands.append((line[2:], [], 0))
            else:
                commands[-1][1].append(line)
    return script, commands


def _local(text: str, folder: Path) -> str:
    for name in FILES:
        text = re.sub(rf"(?<![\w/-]){re.escape(name)}", str(folder / name), text)
    return RELEASE_ID.sub("<release>", text)


def _noisy(lines: list[str], command: str) -> list[str]:
    """Lines of an unseeded answer: figures masked, the interval's width kept (not a mean's)."""
    if "--seed" in command:
        return lines
    shown = []
    for line in lines:
        line = CELL.sub(r"\1<noisy>", line)
        found = INTERVAL.match(line)
        if found:
            width = "" if " mean " in command else f"{float(found[5]) - float(found[4]):.2f}"
            line = f"{found[1]}<noisy>, {found[3]} of width {width}{found[6]}"
        shown.append(line)
    return shown


def test_the_worked_examples_print_what_the_page_shows(run_cli: RunCli, tmp_path: Path) -> None:
    script, commands = _examples()
    made = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True)
    assert made.returncode == 0, made.stderr
    assert len(commands) >= 8
    env = {
        "DENIABLE_AGGREGATOR_CURATE_DB": f"sqlite:///{tmp_path / 'curator.db'}",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    for text, expected, code in commands:
        words = shlex.split(_local(text, tmp_path))
        assert words[0] == "deniable-aggregator", text
        done = run_cli("deniable-aggregator", *words[1:], env=env)
        assert done.returncode == code, (text, done.stderr)
        shown = RELEASE_ID.sub("<release>", done.stdout + done.stderr).splitlines()
        wanted = [_local(line, tmp_path) for line in expected]
        assert _noisy(shown, text) == _noisy(wanted, text), text
