"""Shared test helpers: running the installed console scripts in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli() -> RunCli:
    """Run an installed console script (``deniable`` or ``deniable-aggregator``)."""

    def run(
        script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        executable = BIN / script
        assert executable.exists(), f"console script {script} is not installed in {BIN}"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
        environment.update(env or {})
        return subprocess.run(
            [str(executable), *args],
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout,
            check=False,
        )

    return run
