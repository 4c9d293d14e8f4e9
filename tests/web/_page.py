"""Driving the participant page in Chromium: by keyboard, and reading its IndexedDB."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from typing import Any

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from deniable.shared.wire.v1 import aggregator_pb2 as pb

_READ_STORE = """
const done = arguments[arguments.length - 1];
(async () => {
  const names = (await indexedDB.databases()).map((d) => d.name);
  if (!names.includes("deniable")) return { reports: [], charges: [], settings: [] };
  const db = await new Promise((resolve, reject) => {
    const req = indexedDB.open("deniable");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  const tx = db.transaction(["reports", "charges", "settings"]);
  const all = (name) => new Promise((resolve) => {
    tx.objectStore(name).getAll().onsuccess = (e) => resolve(e.target.result);
  });
  const out = {
    reports: await all("reports"), charges: await all("charges"), settings: await all("settings"),
  };
  db.close();
  return out;
})().then(done, (error) => done({ error: String(error) }));
"""


_PAINT = """
const done = arguments[arguments.length - 1];
const paint = performance.getEntriesByName("first-contentful-paint")[0];
let shifts = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) shifts += entry.value;
}).observe({ type: "layout-shift", buffered: true });
setTimeout(() => done([paint ? paint.startTime : null, shifts]), 100);
"""


def paint_and_shift(driver: Any) -> tuple[float | None, float]:
    """The page's first contentful paint (ms after navigation) and its layout shifts' sum."""
    paint, shift = driver.execute_async_script(_PAINT)
    return paint, shift


def stored(driver: Any) -> dict[str, list[dict[str, Any]]]:
    """The page's IndexedDB at the current origin: kept reports (decoded), charges, settings."""
    state: dict[str, Any] = driver.execute_async_script(_READ_STORE)
    assert "error" not in state, state
    for kept in state["reports"]:
        kept["report"] = pb.Report.FromString(base64.b64decode(kept["report"]))
    return state


def wait_for(driver: Any, condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll ``condition`` until it returns something truthy (its value), or fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            log = driver.get_log("browser")
            text = driver.find_element(By.TAG_NAME, "main").text
            raise AssertionError(f"timed out; page: {text!r}; console: {log}")
        time.sleep(0.05)


def shown(driver: Any, css: str) -> str:
    """The text of the first element matching ``css`` once it exists and is shown."""

    def find() -> str:
        try:
            found = [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
            return found[0].text if found else ""
        except StaleElementReferenceException:  # re-rendered meanwhile: look again
            return ""

    return str(wait_for(driver, find))


def focused(driver: Any) -> str:
    """The focused element's tag and text (or id), for assertions on focus."""
    return str(
        driver.execute_script(
            "const e = document.activeElement; return e.tagName + ' ' + (e.textContent || e.id);"
        )
    )


def open_page(driver: Any, url: str, ready: str = "main h1") -> None:
    """Load a page of the participant and wait for its view (``ready``: a CSS selector)."""
    driver.get(url)
    wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, ready))


def press(driver: Any, *keys: str) -> None:
    """Keys pressed on whatever has focus."""
    ActionChains(driver).send_keys(*keys).perform()


def retype(driver: Any, text: str) -> None:
    """Replace the focused input's text (Ctrl+A, then type), and press Enter."""
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    press(driver, text, Keys.ENTER)


def answer_by_keyboard(
    driver: Any, answers: Mapping[str, str | set[str]], submit: bool = True
) -> None:
    """Answer with Tab, arrows, Space and typing only, then press Enter on the submit button.

    ``answers`` maps an input's name (``answer--QID`` or ``answer--QID--PART``) to the value
    to choose: a radio's value (``yes``, an option's number), a set of checkbox values, or
    the text typed into a number input. Tabbing starts at the page's heading.
    """
    left = {name: (set(want) if isinstance(want, set) else want) for name, want in answers.items()}
    driver.execute_script("document.querySelector('main h1').focus()")
    for _ in range(300):
        press(driver, Keys.TAB)
        element = driver.switch_to.active_element
        name, kind = element.get_attribute("name"), element.get_attribute("type")
        if element.tag_name == "button" and kind == "submit":
            assert not left, f"reached the submit button with {left} unanswered"
            if submit:
                press(driver, Keys.ENTER)
            return
        want = left.get(name)
        if want is None:
            continue
        if kind == "radio":
            while element.get_attribute("value") != want:
                press(driver, Keys.ARROW_DOWN)  # moves to the next radio and checks it
                element = driver.switch_to.active_element
            press(driver, Keys.SPACE)
            del left[name]
        elif kind == "checkbox":
            assert isinstance(want, set)
            if element.get_attribute("value") in want:
                press(driver, Keys.SPACE)
                want.discard(element.get_attribute("value"))
            if not want:
                del left[name]
        else:
            assert isinstance(want, str)
            press(driver, want)
            del left[name]
    raise AssertionError("never reached the submit button")
