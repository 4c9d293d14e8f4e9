"""The page's routes: / lists the open surveys, /s/ID shows one, by keyboard and history."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.web._aggregator import Recorder
from tests.web._page import focused, open_page, paint_and_shift, press, retype, shown, wait_for
from tests.web._surveys import survey, yes_no


def test_the_list_links_each_open_survey_and_history_moves_between_views(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no(), title="Exam honesty"))
    hostile = survey("s2", yes_no(), title="Evil\x1b[2J\u202etitle")
    recorder.add(hostile)
    closed = survey("s3", yes_no(), title="Closed")
    closed.state = pb.SURVEY_STATE_CLOSED
    recorder.add(closed)
    open_page(browser, f"{base}/", ".surveys")
    items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, ".surveys li")]
    assert items[0].startswith("Exam honesty · 1 question · 0 reports so far · id s1")
    assert items[1].startswith("Evil\\x1b[2J\\u202etitle")  # shown as escapes, as the CLI lists it
    assert len(items) == 2
    link = browser.find_element(By.LINK_TEXT, "Exam honesty")
    link.send_keys(Keys.ENTER)  # followed without reloading the page
    wait_for(browser, lambda: browser.current_url == f"{base}/s/s1")
    shown(browser, "form.survey")
    assert focused(browser) == "H1 Exam honesty"
    assert browser.title == "Exam honesty · deniable"
    browser.back()
    shown(browser, ".surveys")
    assert focused(browser) == "H1 Open surveys"
    assert recorder.calls.count("ListSurveys") == 2
    open_page(browser, f"{base}/s/Nope!")
    assert shown(browser, "main h1") == "No such page"


def test_the_page_paints_fast_without_layout_shift(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    recorder, base = aggregator
    recorder.add(survey("s1", yes_no(), yes_no("b", text="Another?")))
    open_page(browser, f"{base}/s/s1", "form.survey")
    paint, shift = paint_and_shift(browser)
    assert paint is not None
    assert paint < 1000
    assert shift < 0.001  # the scrollbar's gutter is kept: content appearing moves nothing


def test_the_settings_dialog_is_keyboard_operable_and_validates(
    browser: Any, aggregator: tuple[Recorder, str]
) -> None:
    _, base = aggregator
    open_page(browser, f"{base}/", ".status")
    browser.find_element(By.ID, "settings-button").send_keys(Keys.ENTER)
    wait_for(browser, lambda: focused(browser) == "INPUT max-epsilon")
    dialog = browser.find_element(By.ID, "settings")
    assert "This browser: 0.0000 spent, 10.0000 left, of 10.0." in dialog.text
    assert "No privacy spent yet." in dialog.text
    retype(browser, "-1")
    error = shown(browser, "#max-epsilon-error")
    assert error == 'max_epsilon must be a finite number > 0, got "-1"'
    assert focused(browser) == "INPUT max-epsilon"
    press(browser, Keys.ESCAPE)
    wait_for(browser, lambda: not dialog.is_displayed())
    assert focused(browser) == "BUTTON Privacy settings"  # focus returns to the opener
