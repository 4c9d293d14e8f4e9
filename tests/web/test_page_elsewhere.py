"""The page served from a separate origin: it calls the aggregator its meta tag names (CORS).

docs/security.md: a participant who does not trust the aggregator's operator with the page's
code serves the same files from another origin, names the aggregator in
``<meta name="deniable-aggregator">``, and the daemon allows that origin with
``--web-origin``. The page then answers as at the daemon's own origin, its memo keyed by
the aggregator's origin; without ``--web-origin`` the browser refuses the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from deniable.client import AggregatorClient, web_bundle
from deniable.shared.questions import question_from_spec
from tests._browser import chromium, require_browser
from tests.conftest import ADMIN_TOKEN, Daemon, start_daemon
from tests.web._page import answer_by_keyboard, open_page, shown, stored
from tests.web._static import page_site

SPEC = [{"id": "cheated", "text": "Did you cheat?", "alpha": 0.5}]


def naming(aggregator: str) -> bytes:
    """The bundle's index.html with the meta tag naming ``aggregator``."""
    index = (web_bundle() / "index.html").read_text()
    meta = f'<meta name="deniable-aggregator" content="{aggregator}">'
    return index.replace("<title>", f"{meta}\n<title>", 1).encode()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    require_browser("browser test of the participant page")
    with chromium(tmp_path / "profile") as driver:
        yield driver


def survey_on(daemon: Daemon) -> str:
    questions = [question_from_spec(item, "question")[0] for item in SPEC]
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        return client.create_survey("Elsewhere", questions).id


def reports(daemon: Daemon, survey_id: str) -> int:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        return int(client.get_survey(survey_id).reports)


def test_a_page_from_another_origin_answers_through_the_aggregator_it_names(
    browser: Any, tmp_path: Path
) -> None:
    with page_site() as site:
        daemon = start_daemon(tmp_path, args=["--web", "127.0.0.1:0", "--web-origin", site.url])
        try:
            aggregator = f"http://{daemon.web_address}"
            site.serve_index(naming(aggregator))
            survey_id = survey_on(daemon)
            open_page(browser, f"{site.url}/s/{survey_id}", "form.survey")
            assert f"at {aggregator}" in shown(browser, "main")
            answer_by_keyboard(browser, {"answer--cheated": "yes"})
            assert "the server stored 1" in shown(browser, ".sent")
            assert reports(daemon, survey_id) == 1
            kept = stored(browser)["reports"]
            assert [report["aggregator"] for report in kept] == [aggregator]
        finally:
            daemon.stop()


def test_without_web_origin_the_browser_refuses_the_call_and_nothing_is_sent(
    browser: Any, tmp_path: Path
) -> None:
    with page_site() as site:
        daemon = start_daemon(tmp_path, args=["--web", "127.0.0.1:0"])
        try:
            site.serve_index(naming(f"http://{daemon.web_address}"))
            survey_id = survey_on(daemon)
            open_page(browser, f"{site.url}/s/{survey_id}", ".alert")
            assert "network error" in shown(browser, ".alert")
            assert browser.find_elements(By.CSS_SELECTOR, "form.survey") == []
            assert reports(daemon, survey_id) == 0
        finally:
            daemon.stop()


def test_a_meta_tag_that_is_not_an_origin_stops_the_page(browser: Any) -> None:
    with page_site() as site:
        site.serve_index(naming("javascript:alert(1)"))
        open_page(browser, f"{site.url}/", ".alert")
        assert "must be an http(s) origin" in shown(browser, ".alert")
