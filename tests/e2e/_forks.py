"""The test side of ``_cli_runner.py``: send it invocations, read back exit code and output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


class Runner:
    """``tests/e2e/_cli_runner.py`` in a subprocess: each command a fork of one process.

    The forked children run the console scripts' entry points with their own arguments,
    environment, exit code and output, without each paying for starting Python.
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_cli_runner.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def run(
        self,
        program: str,
        args: list[str],
        env: dict[str, str],
        cwd: Path | None = None,
        capture: str = "stderr",
    ) -> tuple[int, str]:
        """Exit code and the captured output (``stderr``, ``stdout`` or ``both``)."""
        case: dict[str, object] = {"program": program, "args": args, "env": env}
        case["capture"] = capture
        if cwd is not None:
            case["cwd"] = str(cwd)
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(case) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return int(answer["code"]), str(answer["stderr"])

    def complete(
        self,
        program: str,
        args: list[str],
        env: dict[str, str],
        input: str | None = None,
        terminal: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Exit code, stdout and stderr apart, as ``subprocess.run`` gives them.

        With ``terminal``, stderr is a pseudo-terminal (stdin empty): the returned stderr
        is what it showed, ``\\r``, escapes and ``\\r\\n`` line ends included.
        """
        capture = "terminal" if terminal else "separate"
        case = {"program": program, "args": args, "env": env, "capture": capture}
        case.update({"cwd": str(Path.cwd()), "input": input or ""})
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(case) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return subprocess.CompletedProcess(
            [program, *args], int(answer["code"]), str(answer["stdout"]), str(answer["stderr"])
        )

    @property
    def alive(self) -> bool:
        """Whether the runner process is still there to fork from."""
        return self.process.poll() is None

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
