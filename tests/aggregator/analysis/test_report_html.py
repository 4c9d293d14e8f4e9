"""The HTML report's builders without a browser: escaping, charts, heat maps, the notes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from deniable.aggregator.analysis.publishing._report_html import (
    QuestionResult,
    ReportData,
    participant_text,
)
from deniable.aggregator.analysis.publishing._report_svg import (
    WIDTH,
    Interval,
    escape,
    heat_map,
    interval_chart,
)
from deniable.aggregator.cli.estimate._command import estimate_to_dict
from deniable.aggregator.questions import question_chart, report_page
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.storage import open_storage
from deniable.client import check_mechanism
from deniable.shared.errors import FailedPrecondition
from deniable.shared.questions.joint import cell_names
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.analysis._report_data import HOSTILE, OPTION, SPEC, TITLE, fill, questions

SVG = "{http://www.w3.org/2000/svg}"


def _results(service: AggregatorService, survey: pb.Survey) -> list[QuestionResult]:
    """Each question's estimate as the ``report`` command gathers it."""
    results = []
    for question in survey.questions:
        request = pb.GetEstimateRequest(survey_id=survey.id, question_id=question.id)
        try:
            estimate = service.get_estimate(request)
        except FailedPrecondition as error:
            results.append(QuestionResult(question, None, str(error)))
            continue
        results.append(QuestionResult(question, estimate_to_dict(estimate, question)))
    return results


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The rendered pages of the survey of every kind and of the stepped survey."""
    path = tmp_path_factory.mktemp("report") / "aggregator.db"
    storage = open_storage(f"sqlite:///{path}")
    service = AggregatorService(storage)

    def create(title: str, questions: list[pb.Question], **options: Any) -> pb.Survey:
        request = pb.CreateSurveyRequest(title=title, questions=questions, **options)
        return service.create_survey(request)

    def submit(reports: list[pb.Report], enrollment_token: str = "") -> None:
        request = pb.SubmitReportsRequest(reports=reports, enrollment_token=enrollment_token)
        service.submit_reports(request)

    def issue(survey_id: str, count: int) -> list[str]:
        request = pb.IssueTokensRequest(survey_id=survey_id, count=count)
        return list(service.issue_tokens(request).tokens)

    surveys = fill(create, submit, issue)
    rendered = {}
    for name, survey in zip(("kinds", "stepped"), surveys, strict=True):
        survey = service.get_survey(survey.id)
        data = ReportData(
            survey, _results(service, survey), 0.95, "clopper-pearson",
            datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "9.9.9",
        )  # fmt: skip
        rendered[name] = report_page(data)
    yield rendered
    storage.close()


def _section(page: str, qid: str) -> str:
    match = re.search(f'<section class="question" id="q-{qid}">(.*?)</section>', page, re.S)
    assert match is not None, qid
    return match.group(1)


def _charts(html: str) -> list[ET.Element]:
    """Every inline SVG, parsed as XML: escaping left none of them broken or cut short."""
    return [ET.fromstring(svg) for svg in re.findall(r"<svg .*?</svg>", html, re.S)]


def test_every_survey_string_is_escaped_text_never_markup(pages: dict[str, str]) -> None:
    page = pages["kinds"]
    for raw in ("<script", "<img", "<svg onload", "<style>body", 'onerror="'):
        assert raw not in page
    assert f"<h1>{escape(TITLE)}</h1>" in page
    assert f"<title>{escape(TITLE)}: deniable report</title>" in page
    assert escape(HOSTILE) in _section(page, "cheated")
    assert page.count(escape(OPTION)) >= 3  # the option in a chart, a table and a tooltip
    # as many charts open as close: a label's </svg> closed none of them
    assert page.count("<svg ") == page.count("</svg>") == 8
    texts = ["".join(chart.itertext()) for chart in _charts(page)]
    assert any(OPTION in text for text in texts)  # shown literally, once parsed
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page


def test_escape_covers_markup_quotes_and_terminal_controls() -> None:
    assert escape('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert escape("a\u202eb\x1b") == "a\\u202eb\\x1b"


def _rows(chart: ET.Element) -> list[tuple[float, float, float]]:
    """Each row's point and its interval's ends, in drawn x coordinates."""
    rows = []
    for group in chart.iter(f"{SVG}g"):
        if group.get("class") != "row":
            continue
        point = group.find(f"{SVG}circle")
        line = next(e for e in group.iter(f"{SVG}line") if e.get("class") == "interval")
        assert point is not None
        x1, x2 = float(line.get("x1", "nan")), float(line.get("x2", "nan"))
        rows.append((float(point.get("cx", "nan")), x1, x2))
    return rows


def test_every_point_lies_inside_the_interval_drawn(pages: dict[str, str]) -> None:
    counted = 0
    for page in pages.values():
        for chart in _charts(page):
            for x, low, high in _rows(chart):
                assert low <= x <= high
                counted += 1
    # yes/no 1 + options 3 + numeric 1 + marginals 2 + 3 + items 3, then the stepped q1
    assert counted == 14


def test_the_drawn_positions_are_the_estimates_on_the_axis() -> None:
    rows = [Interval("a", 0.25, 0.1, 0.5), Interval("b", 1.2, 0.9, 1.4)]
    (a, b) = _rows(ET.fromstring(interval_chart(rows, 0.0, 1.0, title="t", bars=True)))
    left, right = 190.0, 540.0
    assert a == pytest.approx((left + 0.25 * 350, left + 0.1 * 350, left + 0.5 * 350), abs=0.06)
    assert b == pytest.approx((right, left + 0.9 * 350, right), abs=0.06)  # clamped to the axis
    (mean,) = _rows(ET.fromstring(interval_chart([rows[0]], -10, 30, title="t", bars=False)))
    assert mean[0] == pytest.approx(left + 10.25 / 40 * 350, abs=0.06)


def test_bad_chart_input_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"'b': interval \[0.5, 0.1\] is reversed"):
        Interval("b", 0.3, 0.5, 0.1)
    with pytest.raises(ValueError, match="'c': estimate and interval must be finite"):
        Interval("c", float("nan"), 0.0, 1.0)
    with pytest.raises(ValueError, match=r"axis \[1.0, 1.0\] must be finite and increasing"):
        interval_chart([], 1.0, 1.0, title="t", bars=False)
    with pytest.raises(ValueError, match=r"values must be 2 rows of 2 cells, got \[2, 1\]"):
        heat_map(["a", "b"], ["x", "y"], [[0.1, 0.2], [0.3]], title="t")


def _cells(chart: ET.Element) -> list[ET.Element]:
    return [g for g in chart.iter(f"{SVG}g") if g.get("class") == "cell"]


def test_heat_maps_have_one_cell_per_entry_and_a_legend(pages: dict[str, str]) -> None:
    joint = [c for c in _charts(_section(pages["kinds"], "habits")) if _cells(c)]
    multi = [c for c in _charts(_section(pages["kinds"], "fruit")) if _cells(c)]
    assert [len(_cells(c)) for c in joint + multi] == [2 * 3, 3 * 3]
    for chart in joint + multi:
        legend = [g for g in chart.iter(f"{SVG}g") if g.get("class") == "legend"]
        assert len(legend) == 1
        assert len(list(legend[0].iter(f"{SVG}rect"))) == 6
    # a label with ", " in it stays one column: the columns come from the parts
    columns = [e.get("class") for e in joint[0].iter(f"{SVG}text")].count("column")
    assert columns == 3
    shades = {rect.get("fill") for cell in _cells(multi[0]) for rect in cell.iter(f"{SVG}rect")}
    assert len(shades) > 1  # shaded by value, not one colour


def test_a_joint_of_three_parts_grows_down_not_across() -> None:
    question = questions({"title": "t", "questions": [
        {"id": "j", "text": "Three", "type": "joint", "epsilon": 2.0, "parts": [
            {"id": "a", "text": "A?"},
            {"id": "b", "text": "B?", "type": "categorical", "options": list("pqrs")},
            {"id": "c", "text": "C?", "type": "categorical", "options": list("vwxyz")},
        ]},
    ]})[1][0]  # fmt: skip
    names = cell_names(question)
    cells = [{"option": name, "estimate": i / 40, "ci_low": 0.0, "ci_high": 1.0}
             for i, name in enumerate(names)]  # fmt: skip
    (chart,) = _charts(question_chart(question, {"marginals": [], "options": cells}))
    texts = list(chart.iter(f"{SVG}text"))
    columns = [t.findtext(f"{SVG}title") for t in texts if t.get("class") == "column"]
    assert columns == [f"c={v}" for v in "vwxyz"]
    rows = [
        t.findtext(f"{SVG}title")
        for t in texts
        if t.get("text-anchor") == "end" and t.find(f"{SVG}title") is not None
    ]
    assert rows == [f"a={a}, b={b}" for a in ("no", "yes") for b in "pqrs"]
    grid = [float(cell.findtext(f"{SVG}text") or "nan") for cell in _cells(chart)]
    assert grid == [round(i / 40, 3) for i in range(40)]  # row-major: c varies fastest
    assert float(chart.get("width") or 0) == WIDTH  # five columns fit the page's width
    assert names[:2] == ["a=no, b=p, c=v", "a=no, b=p, c=w"]


def test_each_question_states_its_figures_and_gate(pages: dict[str, str]) -> None:
    cheated = _section(pages["kinds"], "cheated")
    assert "<dt>n</dt><dd>120 reports</dd>" in cheated
    assert "1.000000: holds against everyone, the operator included" in cheated
    assert "every estimate is from all stored reports (120)" in cheated
    assert "0.95 confidence, clopper-pearson; estimand: population" in cheated
    assert "central" not in cheated  # not stepped: only the local ε
    later = _section(pages["kinds"], "later")
    assert "No estimate yet: question_id: no reports yet for question &#x27;later&#x27;" in later
    stepped = pages["stepped"]
    q1 = _section(stepped, "q1")
    assert (
        "released from 70 reports (the live count: admin only); next release at 120 stored reports"
        in q1
    )
    assert "<dt>central (ε, δ)</dt>" in q1
    assert "in steps of 20 reports" in q1
    assert "not the daemon&#x27;s operator" in q1
    q2 = _section(stepped, "q2")
    assert (
        "No estimate yet: question_id: question &#x27;q2&#x27; is released in steps; its first "
        in q2
    )
    assert "5 stored" not in q2  # the live count: the admin's only
    assert "no estimate below 20 reports per question; estimates refreshed every 50" in stepped
    assert "central (ε, δ) of the survey" in stepped
    assert "<dt>deniable</dt><dd>9.9.9</dd>" in stepped
    assert "2026-01-02 03:04:05 UTC" in stepped


def test_the_privacy_text_is_what_the_participants_device_shows(pages: dict[str, str]) -> None:
    _, asked = questions(SPEC)
    for question in asked:
        quoted = re.search(
            r'<blockquote class="privacy">(.*?)</blockquote>', _section(pages["kinds"], question.id)
        )
        assert quoted is not None
        mechanism = check_mechanism(question)  # what `deniable answer` shows, from the client
        assert quoted[1] == escape(
            f"{mechanism.explain()} Exact epsilon: {mechanism.epsilon!r}, computed on the device."
        )
    question = pb.Question(
        id="q", text="t", binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
    )  # fmt: skip
    mechanism = check_mechanism(question)
    assert participant_text(question) == (
        f"{mechanism.explain()} Exact epsilon: {mechanism.epsilon!r}, computed on the device."
    )
    question.mechanism.randomized_response.alpha = 1.0  # no privacy: devices refuse it
    assert participant_text(question).startswith(
        "Participants' devices refuse this question: question 'q': "
    )
    assert "gives no privacy" in participant_text(question)


def test_the_page_is_self_contained(pages: dict[str, str]) -> None:
    for page in pages.values():
        assert not re.search(r"(src|href)=\"(?!data:)", page)  # nothing to fetch
        assert "url(" not in page
        assert "@import" not in page
        assert "<script" not in page
        assert "@media print" in page


def test_an_estimate_that_cannot_be_drawn_is_refused_naming_it() -> None:
    question = pb.Question(id="q", text="t", binary=pb.BinaryQuestion())
    estimate = {"n": 5, "estimate": 0.5, "estimate_raw": 0.5, "ci_low": 0.6, "ci_high": 0.4}
    survey = pb.Survey(id="s", title="T", questions=[question])
    data = ReportData(
        survey, [QuestionResult(question, estimate)], 0.95, "wilson",
        datetime(2026, 1, 1, tzinfo=UTC), "1",
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"'q': interval \[0.6, 0.4\] is reversed"):
        report_page(data)
