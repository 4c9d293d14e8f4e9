"""The page end to end: a real daemon's web port serves it, a browser answers, the daemon counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from deniable.client import AggregatorClient
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, start_daemon
from tests.web._page import answer_by_keyboard, focused, open_page, paint_and_shift, shown, stored
from tests.web._surveys import KEYBOARD_ANSWERS

SPEC = {
    "title": "Habits and honesty",
    "questions": [
        {"id": "cheated", "text": "Have you ever cheated in an exam?", "alpha": 0.5},
        {"id": "colour", "text": "Favourite colour?", "type": "categorical",
         "options": ["red", "green", "blue"], "epsilon": 1.0},
        {"id": "hours", "text": "Hours of sleep last night?", "type": "numeric",
         "min": 0, "max": 24, "epsilon": 1.0},
        {"id": "fruit", "text": "Which fruit do you eat?", "type": "multi_select",
         "items": ["apples", "pears", "plums"], "epsilon": 1.5},
        {"id": "habits", "text": "Your habits", "type": "joint", "epsilon": 1.5, "parts": [
            {"id": "smoke", "text": "Do you smoke?"},
            {"id": "team", "text": "Which team?", "type": "categorical",
             "options": ["A", "B", "C"]},
            {"id": "age", "text": "Your age", "type": "numeric", "edges": [0, 18, 65, 120]},
        ]},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def web_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A real daemon with its web port (``serve --web 127.0.0.1:0``)."""
    running = start_daemon(tmp_path_factory.mktemp("web-daemon"), args=["--web", "127.0.0.1:0"])
    assert running.web_address is not None
    yield running
    running.stop()


def _create(run_cli: RunCli, daemon: Daemon, tmp_path: Path, spec: object) -> str:
    path = tmp_path / f"spec-{id(spec)}.json"
    path.write_text(json.dumps(spec))
    done = run_cli(
        "deniable-aggregator", "survey", "create", "--server", daemon.address,
        "--admin-token-file", str(daemon.token_file), str(path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[0]


def _stored(daemon: Daemon, survey_id: str) -> int:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        return int(client.get_survey(survey_id).reports)


def test_every_kind_answered_in_the_browser_is_counted_once(
    browser: Any, web_daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    survey_id = _create(run_cli, web_daemon, tmp_path, SPEC)
    base = f"http://{web_daemon.web_address}"
    open_page(browser, f"{base}/", ".surveys")
    browser.find_element(By.LINK_TEXT, "Habits and honesty")  # listed by ListSurveys
    open_page(browser, f"{base}/s/{survey_id}", "form.survey")
    paint, shift = paint_and_shift(browser)
    assert paint is not None  # its time is measured by bench/web_page.py, not asserted here
    assert shift < 0.001  # the scrollbar's gutter is kept: content appearing moves nothing
    answer_by_keyboard(browser, KEYBOARD_ANSWERS)
    assert "Sent 5 randomized answers; the server stored 5." in shown(browser, ".sent")
    assert focused(browser) == "H2 Sent"
    assert _stored(web_daemon, survey_id) == 5
    done = run_cli(
        "deniable-aggregator", "estimate", "--server", web_daemon.address, survey_id, "--json"
    )
    assert done.returncode == 0, done.stderr
    estimates = {e["question_id"]: e for e in json.loads(done.stdout)["estimates"]}
    assert {qid: e["n"] for qid, e in estimates.items()} == dict.fromkeys(estimates, 1)
    assert set(estimates) == {"cheated", "colour", "hours", "fruit", "habits"}
    kept = stored(browser)

    browser.refresh()  # the kept reports, and nothing new sent
    assert shown(browser, ".sent h2") == "Already answered"
    assert _stored(web_daemon, survey_id) == 5
    assert stored(browser) == kept


def test_a_question_above_the_limit_is_refused_and_nothing_is_sent(
    browser: Any, web_daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    spec = {"title": "Too revealing", "questions": [
        {"id": "cheated", "text": "Did you cheat?", "epsilon": 3.0},
    ]}  # fmt: skip
    survey_id = _create(run_cli, web_daemon, tmp_path, spec)
    open_page(browser, f"http://{web_daemon.web_address}/s/{survey_id}", ".alert")
    text = shown(browser, ".alert")
    assert "question 'cheated': epsilon 3.0000 (computed on this device from " in text
    assert "is above your limit of 2.0 per answer (default); refusing to answer" in text
    assert browser.find_elements(By.CSS_SELECTOR, "form.survey") == []
    assert _stored(web_daemon, survey_id) == 0


def test_a_closed_survey_is_refused_and_control_characters_never_reach_the_page(
    browser: Any, web_daemon: Daemon, run_cli: RunCli, tmp_path: Path
) -> None:
    survey_id = _create(run_cli, web_daemon, tmp_path, SPEC)
    closed = run_cli(
        "deniable-aggregator", "survey", "close", "--server", web_daemon.address,
        "--admin-token-file", str(web_daemon.token_file), survey_id,
    )  # fmt: skip
    assert closed.returncode == 0, closed.stderr
    open_page(browser, f"http://{web_daemon.web_address}/s/{survey_id}", ".alert")
    assert f"survey '{survey_id}' is closed" in shown(browser, ".alert")
    hostile = {"title": "Exam", "questions": [
        {"id": "cheated", "text": "Did you cheat?\x1b[2J", "alpha": 0.5},
    ]}  # fmt: skip
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile))
    refused = run_cli(
        "deniable-aggregator", "survey", "create", "--server", web_daemon.address,
        "--admin-token-file", str(web_daemon.token_file), str(path),
    )  # fmt: skip
    assert refused.returncode != 0  # the daemon stores no such text; the page refuses it too
    assert "U+001B (ESC)" in refused.stderr  # (tests/web/test_page_refusals.py)
