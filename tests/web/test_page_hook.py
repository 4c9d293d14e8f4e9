"""The committed page loads in Chromium and exposes its conformance hook."""

from __future__ import annotations

from typing import Any


def test_hook_functions(page: Any) -> None:
    names = page.execute_script("return Object.keys(window.deniable).sort()")
    assert names == ["epsilonOf", "inspect", "perturbMany", "refusal", "replay"]
