"""Headless Debian Chromium through ChromeDriver, for the tests that open real pages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMEDRIVER, CHROMIUM = Path("/usr/bin/chromedriver"), Path("/usr/bin/chromium")
REQUIRE_ENV = "CI_REQUIRE_BROWSER"

# Without the background-networking flags, Chromium's own connections are refused by a
# closed network many at a time; --no-sandbox because CI runs as root.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e .[dev])"
    return None


def require_browser(what: str) -> None:
    """Skip (or fail, in CI with CI_REQUIRE_BROWSER=1) when no browser can run."""
    missing = missing_browser()
    if missing is not None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {missing}", pytrace=False)
        pytest.skip(f"no {what}: {missing}")


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """One headless Chromium with a fresh profile, its console log kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
