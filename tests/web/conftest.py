"""Fixtures of the browser tests: one headless Chromium per module on the committed page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._browser import chromium, require_browser
from tests.web._static import static_page


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chromium on the committed page, with ``window.deniable`` loaded."""
    require_browser("browser test of the participant page")
    with static_page() as base, chromium(tmp_path_factory.mktemp("chromium")) as driver:
        driver.get(f"{base}/conformance")
        driver.set_script_timeout(600)
        ready = driver.execute_script("return typeof window.deniable")
        assert ready == "object", driver.get_log("browser")
        yield driver
