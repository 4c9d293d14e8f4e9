"""The tally check: every stored tally against the one recomputed from the report log."""

from __future__ import annotations

from deniable.aggregator.analysis.check._report import CheckReport, QuestionCheck, SurveyCheck
from deniable.aggregator.analysis.check._tallies import LogSource, check

__all__ = ["CheckReport", "LogSource", "QuestionCheck", "SurveyCheck", "check"]
