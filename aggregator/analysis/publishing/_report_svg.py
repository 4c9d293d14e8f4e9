"""Inline SVG charts for the HTML report: estimates with intervals, and heat maps."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deniable.shared.text import visible

__all__ = [
    "Interval",
    "escape",
    "fmt",
    "heat_color",
    "heat_map",
    "interval_chart",
    "intervals",
    "number_table",
]

WIDTH = 720
"""Every chart's width in SVG units (it scales down to the page's width)."""
LABEL_WIDTH = 180
PLOT_LEFT, PLOT_RIGHT = LABEL_WIDTH + 10, 540
ROW_HEIGHT = 26
AXIS_HEIGHT = 34
MAX_LABEL = 26
"""Characters of a label drawn in a chart; the whole label is its tooltip (``<title>``)."""
LOW_COLOR, HIGH_COLOR = (247, 251, 255), (8, 48, 107)
"""A heat map's colours for 0 and for its largest value (light to dark blue)."""


def escape(text: str) -> str:
    """Untrusted text made safe inside HTML or SVG: markup escaped, controls shown as escapes."""
    return html.escape(visible(text), quote=True)


def _short(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label(text: str, x: float, y: float, anchor: str = "end") -> str:
    """A label cut to ``MAX_LABEL`` characters, the whole of it as its tooltip."""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">'
        f"<title>{escape(text)}</title>{escape(_short(text))}</text>"
    )


@dataclass(frozen=True)
class Interval:
    """One estimate with its interval, as a chart row draws it."""

    label: str
    estimate: float
    low: float
    high: float

    def __post_init__(self) -> None:
        values = (self.estimate, self.low, self.high)
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"{self.label!r}: estimate and interval must be finite, got {values}")
        if self.low > self.high:
            raise ValueError(f"{self.label!r}: interval [{self.low}, {self.high}] is reversed")


def _position(value: float, lo: float, hi: float) -> float:
    """Where ``value`` falls on the plot's x axis from ``lo`` to ``hi`` (clamped to it)."""
    share = (min(max(value, lo), hi) - lo) / (hi - lo)
    return PLOT_LEFT + share * (PLOT_RIGHT - PLOT_LEFT)


def _number(value: float) -> str:
    """Four decimals for shares and small means, four significant digits for large numbers."""
    return f"{value:.4g}" if abs(value) >= 1000 else f"{value:.4f}"


def interval_chart(
    rows: Sequence[Interval], lo: float, hi: float, *, title: str, bars: bool
) -> str:
    """One row per estimate on an axis from ``lo`` to ``hi``: a point and its interval.

    ``bars``: a bar from ``lo`` to the estimate under each point (shares of options or
    items). The numbers are written at the right of each row, and the interval's caps
    mark its ends; a value outside the axis is drawn at its end (the numbers say where).
    """
    if not lo < hi or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"axis [{lo}, {hi}] must be finite and increasing")
    height = len(rows) * ROW_HEIGHT + AXIS_HEIGHT + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">',
        f"<title>{escape(title)}</title>",
    ]
    for index, row in enumerate(rows):
        y = 4 + index * ROW_HEIGHT + ROW_HEIGHT / 2
        x, x_low, x_high = (_position(v, lo, hi) for v in (row.estimate, row.low, row.high))
        parts.append('<g class="row">')
        parts.append(_label(row.label, LABEL_WIDTH, y + 4))
        if bars:
            parts.append(
                f'<rect class="bar" x="{PLOT_LEFT:.1f}" y="{y - 8:.1f}" '
                f'width="{x - PLOT_LEFT:.1f}" height="16"/>'
            )
        parts.append(
            f'<line class="interval" x1="{x_low:.1f}" y1="{y:.1f}" x2="{x_high:.1f}" y2="{y:.1f}"/>'
        )
        for end in (x_low, x_high):
            parts.append(
                f'<line class="cap" x1="{end:.1f}" y1="{y - 6:.1f}" '
                f'x2="{end:.1f}" y2="{y + 6:.1f}"/>'
            )
        parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="4.5"/>')
        parts.append(
            f'<text class="value" x="{PLOT_RIGHT + 12}" y="{y + 4:.1f}">'
            f"{_number(row.estimate)} [{_number(row.low)}, {_number(row.high)}]</text>"
        )
        parts.append("</g>")
    parts.append(_axis(lo, hi, 4 + len(rows) * ROW_HEIGHT))
    parts.append("</svg>")
    return "".join(parts)


def _axis(lo: float, hi: float, top: float) -> str:
    """The x axis with five ticks, ``lo`` and ``hi`` at its ends."""
    parts = [
        f'<g class="axis"><line x1="{PLOT_LEFT}" y1="{top + 4:.1f}" '
        f'x2="{PLOT_RIGHT}" y2="{top + 4:.1f}"/>'
    ]
    for step in range(5):
        value = lo + (hi - lo) * step / 4
        x = _position(value, lo, hi)
        parts.append(f'<line x1="{x:.1f}" y1="{top + 4:.1f}" x2="{x:.1f}" y2="{top + 9:.1f}"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{top + 22:.1f}" text-anchor="middle">{value:.4g}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def heat_color(value: float, top: float) -> str:
    """The fill of a cell holding ``value`` on a scale from 0 to ``top`` (clamped)."""
    share = 0.0 if top <= 0 else min(max(value / top, 0.0), 1.0)
    red, green, blue = (
        round(low + (high - low) * share) for low, high in zip(LOW_COLOR, HIGH_COLOR, strict=True)
    )
    return f"#{red:02x}{green:02x}{blue:02x}"


def heat_map(
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    values: Sequence[Sequence[float]],
    *,
    title: str,
    tooltips: Sequence[Sequence[str]] | None = None,
) -> str:
    """A grid of cells shaded by value (0 to the largest), each with its number written in it.

    A legend under the grid shows the scale's shades from 0 to the largest value;
    ``tooltips`` (same shape as ``values``) are each cell's ``<title>``.
    """
    if len(values) != len(row_labels) or any(len(r) != len(column_labels) for r in values):
        raise ValueError(
            f"values must be {len(row_labels)} rows of {len(column_labels)} cells, got "
            f"{[len(r) for r in values]}"
        )
    top = max((v for row in values for v in row if math.isfinite(v)), default=0.0)
    cell_w = max(48.0, min(96.0, (WIDTH - LABEL_WIDTH - 20) / max(len(column_labels), 1)))
    cell_h = 28.0
    head = 48.0
    grid_w = cell_w * len(column_labels)
    grid_h = cell_h * len(row_labels)
    height = head + grid_h + 64
    width = max(WIDTH, LABEL_WIDTH + 10 + grid_w + 10)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart heat" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}">',
        f"<title>{escape(title)}</title>",
    ]
    left = LABEL_WIDTH + 10
    for c, label in enumerate(column_labels):
        x = left + (c + 0.5) * cell_w
        parts.append(
            f'<text class="column" x="{x:.1f}" y="{head - 8:.1f}" text-anchor="middle">'
            f"<title>{escape(label)}</title>{escape(_short(label, 12))}</text>"
        )
    for r, label in enumerate(row_labels):
        y = head + r * cell_h
        parts.append(_label(label, LABEL_WIDTH, y + cell_h / 2 + 4))
        for c, value in enumerate(values[r]):
            x = left + c * cell_w
            fill = heat_color(value, top)
            ink = "#ffffff" if top > 0 and value / top > 0.55 else "#000000"
            tip = tooltips[r][c] if tooltips is not None else f"{label}: {value:.4f}"
            parts.append(
                f'<g class="cell"><title>{escape(tip)}</title>'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w:.1f}" height="{cell_h:.1f}" '
                f'fill="{fill}"/><text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 4:.1f}" '
                f'text-anchor="middle" fill="{ink}">{value:.3f}</text></g>'
            )
    parts.append(_legend(top, left, head + grid_h + 18))
    parts.append("</svg>")
    return "".join(parts)


def _legend(top: float, left: float, y: float) -> str:
    """Six shades from 0 to ``top``, each labelled with its value."""
    parts = ['<g class="legend">']
    parts.append(f'<text x="{LABEL_WIDTH}" y="{y + 13:.1f}" text-anchor="end">scale</text>')
    for step in range(6):
        value = top * step / 5
        x = left + step * 56
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="56" height="16" '
            f'fill="{heat_color(value, top)}" stroke="#888888"/>'
            f'<text x="{x + 28:.1f}" y="{y + 32:.1f}" text-anchor="middle">{value:.3f}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def fmt(value: float, digits: int = 4) -> str:
    """A number to ``digits`` places with thousands separators; ∞ or ``undefined``."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "undefined"
    return f"{value:,.{digits}f}"


def number_table(header: Sequence[str], rows: Sequence[Interval], extra: Sequence[str] = ()) -> str:
    """The numbers behind a chart: estimate and interval per row (and one more column)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for index, row in enumerate(rows):
        more = f"<td>{extra[index]}</td>" if extra else ""
        body.append(
            f"<tr><td>{escape(row.label)}</td><td>{fmt(row.estimate)}</td>"
            f"<td>[{fmt(row.low)}, {fmt(row.high)}]</td>{more}</tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def intervals(entries: Sequence[dict[str, Any]], key: str = "option") -> list[Interval]:
    """Each entry's label (under ``key``), estimate and interval."""
    return [Interval(str(e[key]), e["estimate"], e["ci_low"], e["ci_high"]) for e in entries]
