"""Fixtures of the browser tests: one headless Chromium per module, the page served to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._browser import chromium, require_browser
from tests.web._aggregator import Recorder, recording_aggregator
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


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for a module's page tests; each test's aggregator is a new origin."""
    require_browser("browser test of the participant page")
    with chromium(tmp_path_factory.mktemp("chromium")) as driver:
        driver.set_script_timeout(60)
        yield driver


@pytest.fixture
def aggregator(browser: Any) -> Iterator[tuple[Recorder, str]]:
    """A recording aggregator serving the page on a fresh port: a fresh origin, fresh storage."""
    with recording_aggregator() as served:
        yield served
    for handle in browser.window_handles[1:]:  # tabs a test opened
        browser.switch_to.window(handle)
        browser.close()
    browser.switch_to.window(browser.window_handles[0])
