"""The built wheel holds one top-level package, ``deniable``, with every module of the tree."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("client", "aggregator", "shared")


def test_the_wheel_installs_the_three_folders_under_deniable(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: a build/ folder left in the checkout cannot leak in
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in FOLDERS:
        shutil.copytree(
            ROOT / folder,
            source / folder,
            ignore=shutil.ignore_patterns("__pycache__", "node_modules", "build"),
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(tmp_path), str(source)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("deniable-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"deniable"}
    assert "deniable/__init__.py" not in names  # a namespace package: nothing to shadow
    packaged = {name for name in names if name.endswith((".py", ".pyi", "py.typed"))}
    expected = {
        f"deniable/{folder}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".pyi") or path.name == "py.typed"
        if "__pycache__" not in path.parts
    }
    assert packaged == expected
    # The browser participant's built page ships inside the wheel (serve --web needs no
    # Node.js), its TypeScript sources do not.
    web = {name for name in names if name.startswith("deniable/client/web/")}
    assert web == {
        f"deniable/client/web/dist/{name}"
        for name in ("index.html", "deniable.js", "deniable.css", "favicon.svg", "SOURCES.json")
    }
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "deniable = deniable.client.cli:main" in scripts
    assert "deniable-aggregator = deniable.aggregator.cli:main" in scripts
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist: ")
    ]
    participant = sorted(re.split(r"[<>=!~ ;\[]", r)[0] for r in requires if "extra ==" not in r)
    # A participant-only install: nothing the daemon or the analysis needs (scipy, ...).
    assert participant == ["click", "grpcio", "numpy", "protobuf"]
