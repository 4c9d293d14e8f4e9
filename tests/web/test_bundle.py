"""The committed page is what its sources build: checked by hashes, and rebuilt where Node is."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from deniable.client import WEB_FILES, web_bundle
from tests.web._node import WEB, node_modules

LIMIT_GZIPPED = 150 * 1024  # issue 35: the page, gzipped, at most 150 KB


def _inputs() -> dict[str, str]:
    """Every file the bundle is built from, with its SHA-256 (as scripts/build.mjs lists them)."""
    files = [
        *sorted(p for p in (WEB / "src").rglob("*") if p.is_file()),
        *sorted(p for p in (WEB / "static").rglob("*") if p.is_file()),
        WEB / "scripts" / "build.mjs",
        WEB / "package.json",
        WEB / "package-lock.json",
    ]
    return {
        p.relative_to(WEB).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }


def test_the_bundle_was_built_from_the_sources_as_they_are() -> None:
    recorded = json.loads((web_bundle() / "SOURCES.json").read_text())["sources"]
    current = _inputs()
    stale = sorted(
        name for name in recorded.keys() | current.keys() if recorded.get(name) != current.get(name)
    )
    assert not stale, f"client/web/dist is stale for {stale}: run `make web` and commit dist/"


def test_the_page_is_small() -> None:
    size = sum(len(gzip.compress((web_bundle() / name).read_bytes(), 9)) for name in WEB_FILES)
    assert size <= LIMIT_GZIPPED, f"the page is {size} bytes gzipped"


def test_a_rebuild_gives_the_committed_bytes(tmp_path: Path) -> None:
    web = node_modules()
    subprocess.run(["node", "scripts/build.mjs", "--out", str(tmp_path)], cwd=web, check=True)
    for name in (*WEB_FILES, "SOURCES.json"):
        rebuilt, committed = (tmp_path / name).read_bytes(), (web_bundle() / name).read_bytes()
        assert rebuilt == committed, f"dist/{name} differs from a fresh build: run `make web`"


def test_the_message_code_is_generated_from_proto(tmp_path: Path) -> None:
    web = node_modules()
    subprocess.run(
        ["node", "scripts/gen.mjs", "--out", str(tmp_path)],
        cwd=web, check=True, env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.ts"))
    assert generated, "protoc-gen-es generated nothing"
    for name in generated:
        committed = (web / "src" / "gen" / name).read_bytes()
        assert (tmp_path / name).read_bytes() == committed, f"src/gen/{name} is stale: make web"


def test_the_typescript_unit_tests_pass() -> None:
    # (tsc type-checks the TypeScript in `make lint`.)
    web = node_modules()
    tested = subprocess.run(["node", "scripts/test.mjs"], cwd=web, capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_page_pins_its_script_and_style_by_their_hashes() -> None:
    # One hash, the page's, then pins all of it (docs/security.md: pinning the bundle).
    index = (web_bundle() / "index.html").read_text()
    for name in ("deniable.js", "deniable.css"):
        digest = hashlib.sha384((web_bundle() / name).read_bytes()).digest()
        pinned = f'/static/{name}" integrity="sha384-{base64.b64encode(digest).decode()}"'
        assert pinned in index, f"index.html does not pin {name}: run `make web`"
