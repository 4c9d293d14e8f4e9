"""Answering in the page: by keyboard, kept before sent, charged once, the kept state on reload."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By

from tests.web._aggregator import Recorder
from tests.web._page import answer_by_keyboard, focused, open_page, shown, stored
from tests.web._surveys import KEYBOARD_ANSWERS, every_kind, survey


def test_every_kind_answered_by_keyboard_is_kept_charged_and_sent_once(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", *every_kind()))
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, KEYBOARD_ANSWERS)
    assert shown(browser, ".sent h2") == "Sent"
    assert focused(browser) == "H2 Sent"
    assert "Sent 5 randomized answers; the server stored 5." in shown(browser, ".sent")
    sent = recorder.submitted()
    assert [r.question_id for r in sent] == ["cheated", "colour", "hours", "fruit", "habits"]
    state = stored(browser)
    kept = {k["questionId"]: k for k in state["reports"]}
    assert {k["aggregator"] for k in kept.values()} == {base}
    assert [kept[r.question_id]["report"] for r in sent] == sent  # what was kept was sent
    assert all(k["sentAt"] for k in kept.values())
    assert sorted(c["reportId"] for c in state["charges"]) == sorted(r.report_id for r in sent)
    rows = browser.find_elements(By.CSS_SELECTOR, ".sent tbody tr")
    assert [row.find_element(By.TAG_NAME, "th").text for row in rows] == [
        r.question_id for r in sent
    ]
    reported = rows[0].find_elements(By.TAG_NAME, "td")[0].text
    assert reported == ("yes" if sent[0].bit else "no")  # the randomized value, as the CLI shows it

    browser.refresh()  # the kept state; nothing new is drawn or sent
    assert shown(browser, ".sent h2") == "Already answered"
    assert "You already answered survey s1 at " in shown(browser, ".sent")
    assert recorder.calls.count("SubmitReports") == 1
    assert stored(browser) == state


def test_an_unacknowledged_answer_is_resent_on_reload_with_the_same_reports(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", *every_kind()))
    recorder.fail["SubmitReports"] = ("unavailable", "draining")
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, KEYBOARD_ANSWERS)
    alert = shown(browser, ".alert")
    assert "Cannot reach the aggregator" in alert
    assert (
        f"cannot reach the aggregator at {base} after 4 attempt(s) (UNAVAILABLE: draining)" in alert
    )
    assert "resends the same reports at no extra privacy cost" in alert
    assert focused(browser) == "H2 Cannot reach the aggregator"
    before = stored(browser)
    assert len(before["reports"]) == 5
    assert not any(k["sentAt"] for k in before["reports"])
    assert len(before["charges"]) == 5  # charged before sending
    assert recorder.calls.count("SubmitReports") == 4  # retried, with the same reports

    del recorder.fail["SubmitReports"]
    browser.refresh()
    assert shown(browser, ".sent h2") == "Sent"
    assert "Privacy cost now: none; every report was charged before." in shown(browser, ".sent")
    after = stored(browser)
    ids = sorted(k["report"].report_id for k in before["reports"])
    assert sorted(r.report_id for r in recorder.submitted()) == ids
    assert len(after["charges"]) == 5
    assert all(k["sentAt"] for k in after["reports"])


def test_a_missing_answer_is_named_and_focused_and_nothing_is_drawn(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", *every_kind()))
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "no", "answer--hours": "30"})
    summary = shown(browser, ".problems")
    assert "answers need attention" in summary
    assert "Nothing was randomized or sent." in summary
    assert "hours: answer must be a number from 0" in summary
    assert "got '30'" in summary
    assert "colour: No answer yet: choose one of the options." in summary
    assert focused(browser).startswith("H2 ")
    error = browser.find_element(By.ID, "error--hours")
    assert error.is_displayed()
    assert "got '30'" in error.text
    invalid = browser.find_element(By.ID, "answer--hours").get_attribute("aria-invalid")
    assert invalid == "true"
    assert stored(browser)["reports"] == []
    assert "SubmitReports" not in recorder.calls
