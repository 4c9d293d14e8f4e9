"""Node.js for the web tests: found, or the test skipped (failed in CI with CI_REQUIRE_NODE=1)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[2] / "client" / "web"
REQUIRE_ENV = "CI_REQUIRE_NODE"


def node_modules() -> Path:
    """``client/web`` with its pinned packages installed (``npm ci`` once, under a lock)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but node or npm is missing", pytrace=False)
        pytest.skip("no Node.js: the committed bundle is checked by its sources' hashes only")
    stamp = WEB / "node_modules" / ".installed"
    (WEB / "build").mkdir(exist_ok=True)
    with open(WEB / "build" / ".npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one `npm ci` for every xdist worker
        lockfile = WEB / "package-lock.json"
        if not stamp.exists() or stamp.stat().st_mtime < lockfile.stat().st_mtime:
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True, capture_output=True
            )
            stamp.touch()
    return WEB
