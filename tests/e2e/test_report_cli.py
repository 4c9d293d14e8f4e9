"""``deniable-aggregator report`` against a real daemon, and its page in headless Chromium."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deniable.aggregator.analysis.publishing._report_svg import escape
from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._browser import chromium, require_browser
from tests.aggregator.analysis._report_data import OPTION, SPEC, TITLE, fill
from tests.conftest import ADMIN_TOKEN
from tests.e2e._forks import Runner


@dataclass(frozen=True)
class Reports:
    """The daemon, its two surveys, and the report files written of them."""

    server: RunningServer
    kinds: pb.Survey
    stepped: pb.Survey
    folder: Path


def _cli(runner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    return runner.complete("deniable-aggregator", list(args), env)


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    started = Runner()
    yield started
    started.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, runner: Runner) -> Iterator[Reports]:
    """One daemon with both surveys filled through the client, and each survey's report."""
    folder = tmp_path_factory.mktemp("report")
    server = start_server(
        open_storage(f"sqlite:///{folder / 'aggregator.db'}"), ADMIN_TOKEN, "127.0.0.1:0"
    )
    try:
        with AggregatorClient(server.address, admin_token=ADMIN_TOKEN) as client:
            kinds, stepped = fill(client.create_survey, client.submit_reports, client.issue_tokens)
        for survey in (kinds, stepped):
            out = folder / f"{survey.id}.html"
            done = _cli(runner, "report", survey.id, "--server", server.address, "--out", str(out))
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
        yield Reports(server, kinds, stepped, folder)
    finally:
        server.stop(grace=1.0)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module, with its console log kept."""
    require_browser("browser check of the HTML report")
    with chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


# Each chart's rows: is the point inside the interval drawn; each heat map's cell count.
GEOMETRY = """
const rows = [...document.querySelectorAll('svg g.row')].map(row => {
  const point = row.querySelector('circle.point').cx.baseVal.value;
  const line = row.querySelector('line.interval');
  return [line.x1.baseVal.value, point, line.x2.baseVal.value];
});
const charts = [...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.getBoundingClientRect();
  return [box.width, box.height];
});
const heat = [...document.querySelectorAll('svg.heat')].map(
  svg => svg.querySelectorAll('g.cell').length);
return {rows, charts, heat, resources: performance.getEntriesByType('resource').length,
        pwned: typeof window.__pwned, text: document.body.innerText};
"""


def _load(browser: Any, page: Path) -> dict[str, Any]:
    browser.get(page.as_uri())
    shown: dict[str, Any] = browser.execute_script(GEOMETRY)
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    return shown


def test_the_report_loads_shows_every_question_and_runs_nothing(
    browser: Any, reports: Reports
) -> None:
    from selenium.webdriver.common.by import By

    shown = _load(browser, reports.folder / f"{reports.kinds.id}.html")
    assert shown["resources"] == 0  # nothing fetched: no request was even attempted
    assert shown["pwned"] == "undefined"  # no script of the survey's text ran
    assert browser.title == f"{TITLE}: deniable report"
    assert browser.find_element(By.TAG_NAME, "h1").text == TITLE  # literally, as text
    headings = browser.find_elements(By.TAG_NAME, "h2")
    expected = [f"{q.id}: {q.text}" for q in reports.kinds.questions]
    assert len(expected) == len(SPEC["questions"])  # type: ignore[arg-type]
    assert [h.text for h in headings] == expected
    assert all(h.is_displayed() for h in headings)
    assert OPTION in shown["text"]
    assert "No estimate yet: question_id: no reports yet for question 'later'" in shown["text"]
    assert len(shown["charts"]) == 8
    assert all(width > 100 and height > 20 for width, height in shown["charts"])
    assert len(shown["rows"]) == 13
    assert all(low <= point <= high for low, point, high in shown["rows"])
    assert shown["heat"] == [6, 9]  # the joint question's 2×3 cross-tab, 3×3 co-occurrence


def test_the_stepped_report_shows_the_release_gate(browser: Any, reports: Reports) -> None:
    shown = _load(browser, reports.folder / f"{reports.stepped.id}.html")
    assert shown["resources"] == 0
    text = shown["text"]
    assert (
        "released from 70 reports (the live count: admin only); next release at 120 stored reports"
        in text
    )
    assert (
        "No estimate yet: question_id: question 'q2' is released in steps; its first release is "
        "at 20 reports" in text
    )
    assert "central (ε, δ) of the survey" in text
    assert len(shown["charts"]) == 1


def test_json_says_what_was_written_and_stdout_takes_the_page(
    runner: Runner, reports: Reports
) -> None:
    out = reports.folder / "again.html"
    address = reports.server.address
    done = _cli(runner, "report", reports.kinds.id, "--server", address, "--out", str(out),
                "--json", "--confidence", "0.9", "--method", "wilson")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "survey_id": reports.kinds.id, "file": str(out), "bytes": out.stat().st_size,
        "questions": 6, "estimated": 5, "waiting": ["later"],
    }  # fmt: skip
    page = out.read_text(encoding="utf-8")
    assert "0.9 confidence, wilson; estimand: population" in page
    streamed = _cli(runner, "report", reports.kinds.id, "--server", reports.server.address,
                    "--out", "-", "--confidence", "0.9", "--method", "wilson")  # fmt: skip
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout.startswith("<!DOCTYPE html>")
    strip = "<dt>generated</dt><dd>"
    assert streamed.stdout.split(strip)[0] == page.split(strip)[0]


def test_anytime_and_simultaneous_intervals_are_asked_for_and_said(
    runner: Runner, reports: Reports
) -> None:
    out = reports.folder / "anytime.html"
    done = _cli(runner, "report", reports.kinds.id, "--server", reports.server.address,
                "--out", str(out), "--anytime", "--simultaneous")  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "0.95 confidence, clopper-pearson, simultaneous over the options, anytime-valid" in page
    with AggregatorClient(reports.server.address) as client:
        phone = client.get_estimate(
            reports.kinds.id, "os", 0.95, "clopper-pearson", simultaneous=True, anytime=True
        )
    assert phone.coverage.startswith("anytime-valid and simultaneous")
    assert escape(phone.coverage) in page


def test_an_unknown_survey_or_a_failed_write_is_one_line(runner: Runner, reports: Reports) -> None:
    out = reports.folder / "unknown.html"
    done = _cli(runner, "report", "nosuch", "--server", reports.server.address, "--out", str(out))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == "Error: not found: survey_id: unknown survey 'nosuch'\n"
    assert not out.exists()
    assert not list(reports.folder.glob(".unknown.html.*"))
    # A folder that refuses new files (even to root) fails the write: one line, exit 2.
    survey_id = reports.kinds.id
    done = _cli(runner, "report", survey_id, "--server", reports.server.address, "--out",
                "/proc/r.html")  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "Error: cannot write --out '/proc/r.html': No such file or directory\n"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["{id}", "--out", "{dir}/missing/r.html"], 2,
         "Error: cannot write --out '{dir}/missing/r.html': directory '{dir}/missing' does not "
         "exist"),
        (["{id}", "--out", "{dir}"], 2, "Error: cannot write --out '{dir}': it is a directory"),
        (["{id}", "--out", "-", "--json"], 2,
         "Error: --json describes a written file; with --out - the page is stdout"),
        (["{id}", "--out", "{dir}/r.html", "--confidence", "1.5"], 2,
         "Error: confidence must be in (0, 0.999999999] (at most 1 - 1e-9), got 1.5"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(
    runner: Runner, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    def fill_in(text: str) -> str:
        return text.format(dir=tmp_path, id="0123456789abcdef")

    # Refused before the daemon is asked: none listens at port 1.
    done = _cli(runner, "report", *map(fill_in, args), "--server", "127.0.0.1:1")
    assert done.returncode == code
    assert done.stdout == ""
    assert done.stderr.rstrip("\n").splitlines()[-1] == fill_in(message)
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left
