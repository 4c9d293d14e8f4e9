"""The survey report's page, each question drawn by its type."""

from __future__ import annotations

from typing import Any

from deniable.aggregator.analysis.publishing import ReportData, render_report
from deniable.aggregator.questions._base import analysis_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["question_chart", "report_page"]


def question_chart(question: pb.Question, data: dict[str, Any]) -> str:
    """Draw the question's estimate as its type does."""
    return analysis_for(question).chart(question, data)


def report_page(data: ReportData) -> str:
    """The whole page (see :func:`~deniable.aggregator.analysis.publishing.render_report`)."""
    return render_report(data, question_chart)
