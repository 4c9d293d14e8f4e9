"""The memo across questions, surveys and tabs: one draw per question content, charged once."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By

from tests.web._aggregator import Recorder
from tests.web._page import answer_by_keyboard, open_page, shown, stored, wait_for
from tests.web._surveys import colour, survey, yes_no


def test_the_same_question_in_another_survey_sends_the_kept_value_at_no_cost(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no("cheated", text="Did you cheat?")))
    recorder.add(survey("s2", yes_no("honest", text="  did YOU cheat? "), colour()))
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "yes"})
    shown(browser, ".sent")
    first = recorder.submitted()[0]

    open_page(browser, f"{base}/s/s2", "form.survey")
    note = shown(browser, ".covered")
    assert f"Asked before (survey s1 at {base})" in note
    assert browser.find_elements(By.NAME, "answer--honest") == []  # no answer is asked
    assert "Sending draws 1 new report" in shown(browser, "#cost")
    answer_by_keyboard(browser, {"answer--colour": "1"})
    cost = "Privacy cost now: epsilon <= 1.3863 (epsilons add up; 1 charged before cost nothing"
    assert f"{cost} again)." in shown(browser, ".sent")
    copy, fresh = recorder.submitted()[1:]
    assert copy.question_id == "honest"
    assert copy.survey_id == "s2"
    assert copy.report_id != first.report_id
    assert copy.bit == first.bit
    charges = {c["reportId"]: c for c in stored(browser)["charges"]}
    assert charges[copy.report_id]["draw"] == first.report_id
    assert charges[fresh.report_id]["draw"] == fresh.report_id


def test_a_question_asked_twice_in_a_survey_is_drawn_once(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no("q1", text="Same?"), yes_no("q2", text="SAME?")))
    open_page(browser, f"{base}/s/s1", "form.survey")
    assert "The same question as q1" in shown(browser, ".covered")
    answer_by_keyboard(browser, {"answer--q1": "no"})
    assert "Privacy cost now: epsilon <= 1.0987" in shown(browser, ".sent")
    one, two = recorder.submitted()
    assert one.report_id != two.report_id
    assert one.bit == two.bit
    assert {c["draw"] for c in stored(browser)["charges"]} == {one.report_id}


def test_two_tabs_answering_at_once_draw_and_charge_each_question_once(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no(), colour()))
    first = browser.current_window_handle
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "yes", "answer--colour": "1"}, submit=False)
    browser.switch_to.new_window("tab")
    second = browser.current_window_handle
    open_page(browser, f"{base}/s/s1", "form.survey")
    answer_by_keyboard(browser, {"answer--cheated": "no", "answer--colour": "3"}, submit=False)
    submit = "document.querySelector('form.survey').requestSubmit()"
    browser.execute_script(submit)
    browser.switch_to.window(first)
    browser.execute_script(submit)
    for handle in (first, second):
        browser.switch_to.window(handle)
        wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, ".sent h2"))
    state = stored(browser)
    kept = {k["report"].report_id for k in state["reports"]}
    assert len(state["reports"]) == 2  # one report per question, whichever tab drew it
    assert sorted(c["reportId"] for c in state["charges"]) == sorted(kept)  # charged once
    assert {r.report_id for r in recorder.submitted()} == kept  # both tabs sent the same reports
    assert len(recorder.stored) == 2
