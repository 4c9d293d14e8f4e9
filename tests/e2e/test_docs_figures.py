"""The docs' figures: every embedded image is committed, every scripted figure is embedded."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
IMAGE = re.compile(r"!\[[^\]]+\]\(([^)\s]+)\)")


def _embedded() -> dict[str, list[str]]:
    """Image file -> the docs that show it (README.md and docs/*.md)."""
    shown: dict[str, list[str]] = {}
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in IMAGE.findall(page.read_text(encoding="utf-8")):
            resolved = (page.parent / target).resolve()
            shown.setdefault(str(resolved.relative_to(ROOT)), []).append(page.name)
    return shown


def test_every_embedded_image_is_a_committed_svg_of_reasonable_size() -> None:
    shown = _embedded()
    assert shown
    for image in shown:
        path = ROOT / image
        assert path.is_file(), f"{shown[image]} show {image}, which does not exist"
        text = path.read_text(encoding="utf-8")
        assert text.startswith("<?xml"), image
        assert "<svg" in text, image
        assert path.stat().st_size < 150_000, image


def test_every_figure_of_the_docs_script_is_embedded_beside_its_table() -> None:
    spec = importlib.util.spec_from_file_location(
        "docs_figures", ROOT / "bench" / "docs_figures.py"
    )
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shown = _embedded()
    assert set(script.FIGURES) >= {"exact_coverage", "participants_categorical"}
    for name in script.FIGURES:
        pages = shown.get(f"docs/{name}.svg")
        assert pages, f"docs/{name}.svg is drawn by bench/docs_figures.py but shown nowhere"
        for page in pages:
            text = (ROOT / ("README.md" if page == "README.md" else f"docs/{page}")).read_text()
            before = text.split(f"({name}.svg)")[0].rstrip().splitlines()[-12:]
            assert any(line.startswith("|") for line in before), f"{name}.svg is not by a table"
