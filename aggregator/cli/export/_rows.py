"""The rows of an export: one per estimated quantity, or one per stored report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from deniable.aggregator.cli._question_estimates import QuestionEstimate
from deniable.aggregator.questions import analysis_for
from deniable.client import Mechanism, mechanism_of
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "ESTIMATE_COLUMNS",
    "REPORT_COLUMNS",
    "Column",
    "estimate_rows",
    "report_rows",
]


@dataclass(frozen=True)
class Column:
    """One column of an export: its name and type ("str", "int", "float", "bool" or "value")."""

    name: str
    type: str


def _columns(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


ESTIMATE_COLUMNS = _columns(
    "survey_id:str question_id:str quantity:str label:str estimate:float estimate_raw:float "
    "ci_low:float ci_high:float std_error:float support:int n:int stored:int "
    "confidence:float method:str coverage:str estimand:str mechanism:str epsilon:float "
    "central_epsilon:float central_delta:float status:str stored_as_released:bool"
)
"""One row per estimated quantity of a question (or one row saying why there is none).

``quantity`` is ``estimate`` (a yes-share or a mean), ``option`` (a multiple-choice
option's share), ``cell`` (a joint question's cross-tab cell), ``marginal`` (one part's
value, summed over the cells), ``covariance`` or ``correlation`` (two parts of a joint
question), ``item`` or ``pair`` (a multi-select question's items and pairs of items).
Each row's ``method`` and ``coverage`` are those of its own interval: a marginal's,
covariance's or correlation's are Wald intervals by the delta method, fixed-n even when the
cells' are anytime-valid; a pair's are normal-approximation intervals.
"""

REPORT_COLUMNS = _columns("report_id:str survey_id:str question_id:str mechanism:str value:value")
"""One row per stored report; ``value`` is the randomized value as the mechanism shows it."""

STATUS_ESTIMATED = "estimated"


def estimate_rows(survey_id: str, results: Iterable[QuestionEstimate]) -> Iterator[list[Any]]:
    """The rows of :data:`ESTIMATE_COLUMNS` for each question, in the survey's order."""
    names = [column.name for column in ESTIMATE_COLUMNS]
    for result in results:
        common: dict[str, Any] = {"survey_id": survey_id, "question_id": result.question.id}
        estimate = result.estimate
        if estimate is None:
            yield [{**common, "status": result.reason}.get(name) for name in names]
            continue
        common.update(
            n=estimate.n,
            stored=estimate.stored,
            stored_as_released=estimate.stored_as_released,
            confidence=estimate.confidence,
            method=estimate.method,
            coverage=estimate.coverage,
            estimand=estimate.estimand,
            mechanism=estimate.mechanism,
            epsilon=estimate.epsilon,
            status=STATUS_ESTIMATED,
        )
        if estimate.HasField("central"):
            common.update(
                central_epsilon=estimate.central.epsilon, central_delta=estimate.central.delta
            )
        for quantity in analysis_for(result.question).quantities(estimate):
            row = {**common, **quantity}
            yield [row.get(name) for name in names]


def report_rows(
    survey: pb.Survey, chunks: Iterable[pb.ExportReportsResponse], advance: Callable[[int], None]
) -> Iterator[list[Any]]:
    """The rows of :data:`REPORT_COLUMNS`, chunk by chunk as the daemon streams them.

    Each report's value is its mechanism's summary (a bool, an integer, a number, packed
    bits in hex, or an OLH report's ``{"a", "b", "value"}``), so a new mechanism's reports
    export as it shows them. ``advance`` is told how many reports each chunk held.
    """
    mechanisms: dict[str, Mechanism] = {q.id: mechanism_of(q) for q in survey.questions}
    for chunk in chunks:
        for report in chunk.reports:
            mechanism = mechanisms[report.question_id]
            yield [
                report.report_id,
                report.survey_id,
                report.question_id,
                mechanism.name,
                mechanism.summary_value(report),
            ]
        advance(len(chunk.reports))
