"""Publishing estimates: the HTML report, its charts, and synthetic tables."""

from __future__ import annotations

from deniable.aggregator.analysis.publishing._report_html import (
    QuestionResult,
    ReportData,
    render_report,
)
from deniable.aggregator.analysis.publishing._report_svg import (
    Interval,
    escape,
    fmt,
    heat_map,
    interval_chart,
    intervals,
    number_table,
)
from deniable.aggregator.analysis.publishing._synthesize import (
    INDEPENDENCE,
    MAX_FITTED_ITEMS,
    MAX_ROWS,
    PRIVACY,
    Column,
    QuestionSampler,
    SynthesisPlan,
    fit_max_entropy,
    max_entropy_rate,
    numbers,
    sample_max_entropy,
    shares_of,
    single_column,
)

__all__ = [
    "INDEPENDENCE",
    "MAX_FITTED_ITEMS",
    "MAX_ROWS",
    "PRIVACY",
    "Column",
    "Interval",
    "QuestionResult",
    "QuestionSampler",
    "ReportData",
    "SynthesisPlan",
    "escape",
    "fit_max_entropy",
    "fmt",
    "heat_map",
    "interval_chart",
    "intervals",
    "max_entropy_rate",
    "number_table",
    "numbers",
    "render_report",
    "sample_max_entropy",
    "shares_of",
    "single_column",
]
