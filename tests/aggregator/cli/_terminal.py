"""Console scripts run with a pseudo-terminal as stderr, as a user at a terminal sees them."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import BIN
from tests.e2e._forks import Runner


def on_terminal(
    runner: Runner, script: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (a forked child of ``runner``) with stderr a pseudo-terminal.

    stdout is a file; the returned ``stderr`` is what the terminal showed.
    """
    assert (BIN / script).exists(), f"console script {script} is not installed in {BIN}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    environment.update(env or {})
    return runner.complete(script, list(args), environment, terminal=True)


def last_drawn(shown: str) -> str:
    """The bar's last state: it is redrawn in place after each ``\\r``."""
    return [part for part in shown.split("\r") if part.strip()][-1]
