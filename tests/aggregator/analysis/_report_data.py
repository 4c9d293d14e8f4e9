"""Surveys for the HTML report's tests: every kind of question, hostile text, a stepped survey."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from deniable.aggregator.cli.survey._spec import questions_from_spec
from deniable.client import build_report, check_mechanism, parse_answer
from deniable.shared.wire.v1 import aggregator_pb2 as pb

# Markup that would run script, fetch, or close the chart early if it were not escaped.
HOSTILE = (
    '<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">'
    '</svg><svg onload="window.__pwned=3"><style>body{display:none}</style>'
)
TITLE = f"Habits {HOSTILE}"
OPTION = f"</svg><script>window.__pwned=4</script>{HOSTILE[:20]}"

SPEC: dict[str, object] = {
    "title": TITLE,
    "questions": [
        {"id": "cheated", "text": f"Did you cheat? {HOSTILE}", "epsilon": 1.0},
        {"id": "os", "text": "Which phone?", "type": "categorical", "epsilon": 1.0,
         "options": ["iOS", OPTION, '"><img src=x onerror="window.__pwned=5">']},
        {"id": "hours", "text": "Hours a week?", "type": "numeric", "min": 0, "max": 40,
         "epsilon": 1.0},
        {"id": "habits", "text": "Together", "type": "joint", "epsilon": 2.0, "parts": [
            {"id": "copied", "text": "Copied?"},
            {"id": "dept", "text": "Department?", "type": "categorical",
             "options": ["HR", OPTION, "a, b"]},
        ]},
        {"id": "fruit", "text": "Which fruit?", "type": "multi_select", "epsilon": 1.5,
         "items": ["apples", OPTION, "plums"]},
        {"id": "later", "text": "Nobody answered this <b>yet</b>", "epsilon": 1.0},
    ],
}  # fmt: skip
"""Every kind of question; ``later`` gets no reports."""

STEPPED: dict[str, object] = {
    "title": "Stepped",
    "questions": [
        {"id": "q1", "text": "Released in steps?", "epsilon": 1.0},
        {"id": "q2", "text": "Below the gate?", "epsilon": 1.0},
    ],
}
MIN_REPORTS, RELEASE_STEP = 20, 50
STEPPED_BATCHES = ({"q1": 70, "q2": 5}, {"q1": 10})
"""q1: released at 20 and at 70 (the first batch), 80 stored, next at 120; q2: below the gate."""


def questions(spec: dict[str, object]) -> tuple[str, list[pb.Question]]:
    """A spec's title and questions as ``survey create`` parses them."""
    return questions_from_spec(spec)


def _answer(qid: str, i: int) -> str:
    """Participant ``i``'s true answer to ``qid``: varied, so no estimate sits on an edge."""
    return {
        "cheated": "yes" if i % 3 else "no",
        "os": str(i % 3 + 1),
        "hours": str(5 + i % 30),
        "habits": f"{'yes' if i % 2 else 'no'},{i % 3 + 1}",
        "fruit": ["apples", "2,3", "1,3", "none"][i % 4],
        "q1": "yes" if i % 4 else "no",
        "q2": "yes",
    }[qid]


def reports(survey: pb.Survey, counts: dict[str, int], seed: int) -> list[pb.Report]:
    """``counts[qid]`` participants' randomized reports per question, through the client."""
    rng = np.random.default_rng(seed)
    made = []
    for question in survey.questions:
        mechanism = check_mechanism(question)
        for i in range(counts.get(question.id, 0)):
            answer = parse_answer(_answer(question.id, i), question)
            made.append(build_report(survey.id, question, mechanism, answer, rng).report)
    return made


def fill(
    create: Callable[..., pb.Survey],
    submit: Callable[..., object],
    issue: Callable[[str, int], list[str]],
    seed: int = 7,
) -> tuple[pb.Survey, pb.Survey]:
    """Create both surveys with ``create(title, questions, **options)`` and submit reports.

    ``submit(reports)`` sends a batch, ``submit(reports, enrollment_token=T)`` one enrolled
    participant's, and ``issue(survey_id, count)`` issues tokens. The stepped survey
    requires enrollment (its central ε assumes it): participant ``i`` of a batch answers
    each question that has an ``i``-th report, in a batch of its own with a token of its own.
    """
    survey = create(*questions(SPEC))
    counts = {q.id: 120 for q in survey.questions if q.id != "later"}
    submit(reports(survey, counts, seed))
    stepped = create(
        *questions(STEPPED),
        min_reports=MIN_REPORTS,
        release_step=RELEASE_STEP,
        enrollment_required=True,
    )
    for index, batch in enumerate(STEPPED_BATCHES):
        made = reports(stepped, batch, seed + 1 + index)
        answers = [[r for r in made if r.question_id == qid] for qid in batch]
        tokens = issue(stepped.id, max(batch.values()))
        for i, token in enumerate(tokens):
            submit([each[i] for each in answers if i < len(each)], enrollment_token=token)
    return survey, stepped
