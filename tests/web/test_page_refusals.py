"""A hostile or changed survey is refused with the CLI's meaning, before anything is drawn."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.web._aggregator import Recorder
from tests.web._page import (
    answer_by_keyboard,
    focused,
    open_page,
    press,
    retype,
    shown,
    stored,
    wait_for,
)
from tests.web._surveys import colour, survey, yes_no

NOT_SENT = "refusing to answer, nothing was sent"


def _refusal(browser: Any, url: str) -> str:
    open_page(browser, url, ".alert")
    text = shown(browser, ".alert")
    assert focused(browser).startswith("H2 ")  # keyboard and screen reader users land on it
    return text


@pytest.mark.parametrize(
    ("where", "change", "shown_as"),
    [
        ("questions[0].text", lambda s: setattr(s.questions[0], "text", "Cheat?\x1b[2J"),
         "contains U+001B (ESC) at position 6"),
        ("title", lambda s: setattr(s, "title", "Exam \u202etxet"),
         "contains U+202E (RIGHT-TO-LEFT OVERRIDE) at position 5"),
        ("questions[1].categorical.options[1]",
         lambda s: s.questions[1].categorical.options.__setitem__(1, "gr\reen"),
         "contains U+000D (CR) at position 2"),
    ],
)  # fmt: skip
def test_control_characters_in_any_text_refuse_the_survey(
    browser: Any, aggregator: tuple[Recorder, str], where: str, change: Any, shown_as: str
) -> None:
    recorder, base = aggregator
    hostile = survey("s1", yes_no(), colour())
    change(hostile)
    recorder.add(hostile)
    text = _refusal(browser, f"{base}/s/s1")
    assert f"survey s1: {where} {shown_as}" in text
    assert NOT_SENT in text
    assert browser.find_elements(By.CSS_SELECTOR, "form.survey") == []
    assert stored(browser)["reports"] == []
    assert "SubmitReports" not in recorder.calls


def test_an_epsilon_above_the_limit_is_refused_until_the_participant_raises_it(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no("cheated", alpha=0.8)))  # ε = ln 9 = 2.1972
    text = _refusal(browser, f"{base}/s/s1")
    assert (
        "question 'cheated': epsilon 2.1973 (computed on this device from randomized_response) is "
        "above your limit of 2.0 per answer (default); refusing to answer, nothing was sent. To "
        'accept this privacy loss, raise the limit with "Maximum epsilon per answer" under '
        "Privacy settings on this page"
    ) in text
    browser.find_element(By.CSS_SELECTOR, ".alert button").send_keys(Keys.ENTER)  # Privacy settings
    wait_for(browser, lambda: focused(browser) == "INPUT max-epsilon")
    retype(browser, "2.5")
    assert shown(browser, "dialog .saved") == "Saved: your limits apply from now on."
    press(browser, Keys.ESCAPE)
    shown(browser, "form.survey")  # re-checked with the new limit: now asked
    assert [s["maxEpsilon"] for s in stored(browser)["settings"]] == [2.5]
    answer_by_keyboard(browser, {"answer--cheated": "yes"})
    assert shown(browser, ".sent h2") == "Sent"


def test_a_question_changed_after_its_report_was_kept_is_refused(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no("cheated", alpha=0.5)))
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "no"})
    shown(browser, ".sent")
    kept = stored(browser)
    recorder.add(survey("s1", yes_no("cheated", alpha=0.25)))  # same id, another mechanism
    text = _refusal(browser, f"{base}/s/s1")
    drawn = kept["reports"][0]["drawnAt"]
    assert (
        f"question 'cheated' of survey s1 at {base} is not the question your report for it was "
        f"drawn for on {drawn} (its options or mechanism changed)"
    ) in text
    assert NOT_SENT in text
    assert recorder.calls.count("SubmitReports") == 1
    assert stored(browser) == kept


def test_over_the_budget_the_reports_are_kept_not_charged_not_sent(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no("a"), yes_no("b", text="Another?")))  # 2 × 1.0986
    open_page(browser, f"{base}/s/s1", "form.survey")
    browser.find_element(By.ID, "settings-button").send_keys(Keys.ENTER)
    wait_for(browser, lambda: focused(browser) == "INPUT max-epsilon")
    press(browser, Keys.TAB)
    retype(browser, "2")
    shown(browser, "dialog .saved")
    press(browser, Keys.ESCAPE)
    answer_by_keyboard(browser, {"answer--a": "yes", "answer--b": "no"})
    text = shown(browser, ".alert")
    assert (
        "answering would spend epsilon 2.1973, but only 2.0000 of your budget of 2.0 (set in this "
        "browser) is left in this browser (0.0000 spent): 0.1973 over budget; refusing to answer, "
        "nothing was sent"
    ) in text
    state = stored(browser)
    assert len(state["reports"]) == 2
    assert state["charges"] == []
    assert "SubmitReports" not in recorder.calls
    covered = browser.find_elements(By.CSS_SELECTOR, ".covered")
    assert len(covered) == 2
    assert "Answered before" in covered[0].text

    browser.execute_script("document.getElementById('settings-button').focus()")
    press(browser, Keys.ENTER)
    wait_for(browser, lambda: focused(browser) == "INPUT max-epsilon")
    press(browser, Keys.TAB)
    retype(browser, "10")
    shown(browser, "dialog .saved")
    press(browser, Keys.ESCAPE)
    browser.find_element(By.CSS_SELECTOR, "button.primary").send_keys(Keys.ENTER)
    shown(browser, ".sent")
    sent = sorted(r.report_id for r in recorder.submitted())
    assert sent == sorted(k["report"].report_id for k in state["reports"])  # the kept ones


def test_a_closed_survey_and_aggregator_errors_are_shown_in_the_clis_words(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    closed = survey("s2", yes_no())
    closed.state = pb.SURVEY_STATE_CLOSED
    recorder.add(closed)
    assert "survey 's2' is closed" in _refusal(browser, f"{base}/s/s2")
    assert "survey 'nope' not found" in _refusal(browser, f"{base}/s/nope")
    recorder.add(survey("s1", yes_no()))
    recorder.fail["SubmitReports"] = ("failed_precondition", "survey 's1' is closed")
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "yes"})
    text = shown(browser, ".alert")
    assert "Refused by the aggregator" in text
    assert "refused by the aggregator: survey 's1' is closed" in text
    assert recorder.calls.count("SubmitReports") == 1  # not retried
