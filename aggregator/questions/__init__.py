"""The aggregator's side of each question type: one module per type, one registry.

A type's module holds what ``plan`` computes for it, what ``simulate`` draws as truth and
measures, and how its estimates read in ``estimate``'s text and JSON. Commands reach it
only through :func:`analysis_for`.
"""

from __future__ import annotations

from deniable.aggregator.questions._base import (
    Emit,
    Outcome,
    PlanRequest,
    QuestionAnalysis,
    Simulation,
    SimulationRequest,
    Transport,
    analyses,
    analysis_for,
    register_analysis,
)
from deniable.aggregator.questions._report import question_chart, report_page
from deniable.aggregator.questions._synthesis import plan_synthesis
from deniable.aggregator.questions._text import mechanism_summary, transport_line
from deniable.aggregator.questions.binary import BINARY_ANALYSIS, mechanism_line, privacy_line
from deniable.aggregator.questions.categorical import CATEGORICAL_ANALYSIS
from deniable.aggregator.questions.joint import JOINT_ANALYSIS
from deniable.aggregator.questions.multi_select import MULTI_SELECT_ANALYSIS
from deniable.aggregator.questions.numeric import NUMERIC_ANALYSIS

__all__ = [
    "BINARY_ANALYSIS",
    "CATEGORICAL_ANALYSIS",
    "JOINT_ANALYSIS",
    "MULTI_SELECT_ANALYSIS",
    "NUMERIC_ANALYSIS",
    "Emit",
    "Outcome",
    "PlanRequest",
    "QuestionAnalysis",
    "Simulation",
    "SimulationRequest",
    "Transport",
    "analyses",
    "analysis_for",
    "mechanism_line",
    "mechanism_summary",
    "plan_synthesis",
    "privacy_line",
    "question_chart",
    "register_analysis",
    "report_page",
    "transport_line",
]
