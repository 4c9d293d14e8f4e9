"""Fixtures of the browser tests: one headless Chromium per worker, the page served to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._browser import chromium, require_browser
from tests.web._aggregator import Recorder, recording_aggregator
from tests.web._static import static_page


@pytest.fixture(scope="session")
def chromium_of_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium per test worker (starting one costs a second or two)."""
    require_browser("browser test of the participant page")
    with chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


@pytest.fixture(scope="session")
def page_url() -> Iterator[str]:
    """The committed page, served on 127.0.0.1 for the worker's library tests."""
    with static_page() as base:
        yield f"{base}/conformance"


@pytest.fixture(scope="module")
def page(chromium_of_worker: Any, page_url: str) -> Any:
    """Chromium on the committed page, freshly loaded for the module (``window.deniable``)."""
    driver = chromium_of_worker
    driver.get(page_url)  # a fresh document: no module sees another's wrapped functions
    driver.set_script_timeout(600)
    ready = driver.execute_script("return typeof window.deniable")
    assert ready == "object", driver.get_log("browser")
    return driver


@pytest.fixture(scope="module")
def browser(chromium_of_worker: Any) -> Any:
    """The worker's Chromium for a module's page tests; each test's aggregator is a new origin."""
    driver = chromium_of_worker
    driver.get("about:blank")
    driver.set_script_timeout(60)
    return driver


@pytest.fixture
def aggregator(browser: Any) -> Iterator[tuple[Recorder, str]]:
    """A recording aggregator serving the page on a fresh port: a fresh origin, fresh storage."""
    with recording_aggregator() as served:
        yield served
    for handle in browser.window_handles[1:]:  # tabs a test opened
        browser.switch_to.window(handle)
        browser.close()
    browser.switch_to.window(browser.window_handles[0])
