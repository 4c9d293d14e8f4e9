"""Run an installed console script on a real pseudo-terminal, typing at its prompts."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.conftest import BIN

PROMPT_END = (b": ", b"]: ")


def on_terminal(
    program: str,
    args: Sequence[str],
    env: dict[str, str],
    typed: Sequence[str] = (),
    *,
    cwd: Path | None = None,
    at_prompt: Callable[[int], None] | None = None,
    timeout: float = 60,
) -> tuple[int, str]:
    """Exit code and what the terminal showed (``\\r\\n`` made ``\\n``), typed lines included.

    stdin, stdout and stderr are all the terminal. Each time the output stops at a prompt
    (it ends with ``": "``) the next line of ``typed`` is typed, echoed as a terminal does;
    ``at_prompt`` is first called with the process id (the process is then waiting).
    """
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(BIN / program), *args], stdin=follower, stdout=follower, stderr=follower,
        env=env, cwd=cwd, start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    shown, pending, deadline = b"", list(typed), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child's end is closed
                break
            if not chunk:
                break
            shown += chunk
            if pending and shown.endswith(PROMPT_END):
                time.sleep(0.05)  # the prompt is flushed; the child now reads
                if at_prompt is not None:
                    at_prompt(process.pid)
                    at_prompt = None
                os.write(leader, pending.pop(0).encode("utf-8") + b"\n")
        else:
            process.kill()
            raise TimeoutError(f"{program} {' '.join(args)}: no end in {timeout} s: {shown!r}")
        code = process.wait(timeout=timeout)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    return code, shown.decode("utf-8", "replace").replace("\r\n", "\n")
