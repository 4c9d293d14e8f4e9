"""The survey report: one self-contained HTML page (inline CSS and SVG, no script, no requests)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from deniable.aggregator.analysis.publishing._report_svg import escape, fmt
from deniable.client import RefusedError, check_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Chart", "QuestionResult", "ReportData", "participant_text", "render_report"]

Chart = Callable[[pb.Question, dict[str, Any]], str]
"""A question's chart(s) and the numbers behind them, from its estimate (its JSON form)."""

STATES = {pb.SURVEY_STATE_OPEN: "open", pb.SURVEY_STATE_CLOSED: "closed"}

# No script may run and nothing may be fetched, even if a survey string escaped escaping:
# the page's own styles are inline, its charts inline SVG.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       padding: 0 1em; color: #111; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
section.question { margin: 2em 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
p.notice { background: #fff4d6; border-left: 4px solid #d9a400; padding: 0.5em 0.8em; }
blockquote.privacy { border-left: 4px solid #7aa6d6; margin: 0.5em 0; padding: 0.2em 0.8em;
                     background: #f3f8fd; }
svg.chart { max-width: 100%; height: auto; display: block; margin: 0.5em 0;
            font-size: 12px; font-family: system-ui, sans-serif; }
svg.chart .bar { fill: #c6dbef; }
svg.chart .interval, svg.chart .cap { stroke: #08306b; stroke-width: 2; }
svg.chart .point { fill: #d94801; }
svg.chart .axis line { stroke: #555; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.15em 0.5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.muted { color: #555; }
@media print {
  body { margin: 0; max-width: none; font-size: 10.5pt; }
  section.question { break-inside: avoid; page-break-inside: avoid; }
  h2 { break-after: avoid; page-break-after: avoid; }
  p.notice, blockquote.privacy { background: none; }
  svg.chart { max-width: 17cm; }
}
@page { margin: 15mm; }
"""


@dataclass(frozen=True)
class QuestionResult:
    """A question and its estimate as ``estimate_to_dict`` gives it, or why there is none."""

    question: pb.Question
    estimate: dict[str, Any] | None
    reason: str = ""


@dataclass(frozen=True)
class ReportData:
    """Everything the page shows: the survey, each question's result, and how it was made."""

    survey: pb.Survey
    results: Sequence[QuestionResult]
    confidence: float
    method: str
    generated: datetime
    version: str
    simultaneous: bool = False
    anytime: bool = False


def _kinds(data: ReportData) -> str:
    """The method asked for, and whether the intervals are simultaneous or anytime-valid."""
    asked = [data.method]
    asked += ["simultaneous over the options"] if data.simultaneous else []
    asked += ["anytime-valid"] if data.anytime else []
    return ", ".join(asked)


def participant_text(question: pb.Question) -> str:
    """What a participant's device shows about the question's privacy before answering.

    The same code as ``deniable answer``: the client's check of the mechanism and the
    mechanism's plain-language explanation, or the client's refusal when it refuses.
    """
    try:
        mechanism = check_mechanism(question)
    except RefusedError as error:
        return f"Participants' devices refuse this question: {error}"
    return f"{mechanism.explain()} Exact epsilon: {mechanism.epsilon!r}, computed on the device."


def _facts(rows: Sequence[tuple[str, str]]) -> str:
    """A definition list; ``rows`` hold escaped HTML."""
    items = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return f'<dl class="facts">{items}</dl>'


def _release(survey: pb.Survey, data: dict[str, Any]) -> str:
    """The release gate's state for one estimate: released from how many of the stored."""
    if not survey.min_reports and not survey.release_step:
        return f"every estimate is from all stored reports ({data['n']:,})"
    if data.get("stored_as_released"):  # the live count is the admin's only
        text = f"released from {data['n']:,} reports (the live count: admin only)"
    else:
        text = f"released from {data['n']:,} of {data['stored']:,} stored reports"
    if data["next_release_at"]:
        text += f"; next release at {data['next_release_at']:,} stored reports"
    return text


def _question(survey: pb.Survey, result: QuestionResult, chart: Chart) -> str:
    question, data = result.question, result.estimate
    heading = (
        f"{escape(question.id)}: {escape(question.text)}" if question.text else escape(question.id)
    )
    parts = [f'<section class="question" id="q-{escape(question.id)}"><h2>{heading}</h2>']
    if data is None or data["n"] == 0:
        reason = result.reason or "no reports yet"
        parts.append(f'<p class="notice">No estimate yet: {escape(reason)}</p>')
    else:
        parts.append(chart(question, data))
        epsilon = fmt(data["epsilon"], 6)
        facts = [
            ("n", f"{data['n']:,} reports"),
            ("release", escape(_release(survey, data))),
            ("local ε (exact)", f"{epsilon}: holds against everyone, the operator included"),
        ]
        central = data.get("central")
        if central is not None:
            facts.append(
                (
                    "central (ε, δ)",
                    f"({fmt(central['epsilon'], 6)}, {central['delta']:.1e}) in steps of "
                    f"{central['step']:,} reports: {escape(str(central['holds_against']))}",
                )
            )
        facts.append(("mechanism", escape(str(data["mechanism"]))))
        facts.append(
            (
                "interval",
                f"{data['confidence']:.6g} confidence, {escape(str(data['method']))}; estimand: "
                f"{escape(str(data['estimand']))}",
            )
        )
        if data.get("coverage"):
            facts.append(("what it promises", escape(str(data["coverage"]))))
        if data.get("joint_coverage"):
            facts.append(("joint intervals", escape(str(data["joint_coverage"]))))
        parts.append(_facts(facts))
    parts.append(
        "<h3>What participants were told</h3>"
        f'<blockquote class="privacy">{escape(participant_text(question))}</blockquote>'
        "</section>"
    )
    return "".join(parts)


def _gate(survey: pb.Survey) -> str:
    """The survey's release gate and steps, and its composed central (ε, δ), in words."""
    if not survey.min_reports and not survey.release_step:
        return "none: estimates are from all stored reports; only the local ε applies"
    words = []
    if survey.min_reports:
        words.append(f"no estimate below {survey.min_reports:,} reports per question")
    if survey.release_step:
        words.append(f"estimates refreshed every {survey.release_step:,} reports per question")
    return "; ".join(words)


def render_report(data: ReportData, chart: Chart) -> str:
    """The whole page; every string from the survey is escaped.

    ``chart`` draws each question's estimate (each question type has its own).
    """
    survey = data.survey
    created = datetime.fromtimestamp(survey.created_unix_ms / 1000, UTC)
    facts = [
        ("survey id", escape(survey.id)),
        ("state", STATES.get(survey.state, "unknown")),
        ("reports stored", f"{survey.reports:,}"),
        ("questions", f"{len(survey.questions):,}"),
        ("created", created.strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("release gate", escape(_gate(survey))),
    ]
    if survey.HasField("central"):
        central = survey.central
        facts.append(
            (
                "central (ε, δ) of the survey",
                f"({fmt(central.epsilon, 6)}, {central.delta:.1e}) over "
                f"{central.questions} question(s), against readers of released estimates; "
                "the operator, who sees every report, is held only to each question's local ε",
            )
        )
    facts += [
        ("intervals", f"{data.confidence:.6g} confidence, {escape(_kinds(data))} (as requested)"),
        ("generated", data.generated.strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("deniable", escape(data.version)),
    ]
    body = "".join(_question(survey, result, chart) for result in data.results)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{escape(survey.title)}: deniable report</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<header><h1>{escape(survey.title)}</h1>{_facts(facts)}"
        '<p class="muted">Each estimate is from randomized reports: no participant\'s '
        "true answer was sent. A point is the estimate, the line with caps its interval."
        "</p></header><main>"
        f"{body}</main></body></html>\n"
    )
