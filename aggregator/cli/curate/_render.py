"""The text lines of a curator answer, read from the same document ``--json`` prints."""

from __future__ import annotations

from typing import Any

__all__ = ["privacy_line", "render_answer"]


def _g(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{name} {_g(part)}" for name, part in value.items())
    return format(value, ".10g") if isinstance(value, float) else str(value)


def _interval(interval: dict[str, Any]) -> str:
    level = f"{100 * interval.get('confidence', 0.95):g}%"
    return f"{level} interval [{_g(interval['low'])}, {_g(interval['high'])}]"


def _title(document: dict[str, Any]) -> str:
    query = str(document.get("query", "answer"))
    column = document.get("column")
    where = document.get("where")
    text = query.capitalize() + (f" of {column}" if column else "")
    return text + (f" where {where}:" if where else ":")


def privacy_line(document: dict[str, Any]) -> str:
    """One line on what the answer cost, and what is left."""
    privacy = document.get("privacy") or {}
    if privacy.get("private") is False:
        return "Privacy: none (seeded noise); no ledger was read or written. Do not publish"
    if privacy.get("preview"):
        charge = privacy.get("would_spend", {})
        return (
            f"Preview: nothing spent, no data read, no noise drawn; the query would spend "
            f"ε = {_g(charge.get('epsilon'))}"
            + (f", δ = {_g(charge['delta'])}" if charge.get("delta") else "")
        )
    if privacy.get("post_processing"):
        return (
            f"Privacy: no cost: post-processing of release {privacy.get('release')} "
            f"(which spent ε = {_g(privacy.get('release_epsilon'))} once)"
        )
    charge = privacy.get("charge") or {}
    balance = privacy.get("balance") or {}
    spent = f"ε = {_g(charge.get('epsilon'))}" + (
        f", δ = {_g(charge['delta'])}" if charge.get("delta") else ""
    )
    mine = (
        f"; {privacy.get('analyst')} has spent {_g(balance.get('epsilon_spent'))} of "
        f"{_g(balance.get('epsilon_budget'))}"
        if balance.get("epsilon_budget") is not None
        else ""
    )
    return (
        f"Privacy: spent {spent} on data set {privacy.get('dataset')!r}{mine}; the data set "
        f"has ε = {_g(balance.get('dataset_epsilon_left'))} left"
    )


def render_answer(document: dict[str, Any]) -> list[str]:
    """Title, released values with intervals, the noise and unit, and the privacy line."""
    lines = [_title(document)]
    preview = (document.get("privacy") or {}).get("preview")
    bins = document.get("bins")
    if bins is not None:
        for item in bins:
            if preview:
                continue
            lines.append(
                f"  {item.get('value')!s}: {_g(item.get('released'))}, "
                f"{_interval(item['interval'])}"
            )
        if not bins and not preview:
            lines.append("  (no value passed the threshold)")
    if preview:
        interval = document.get("interval") or {}
        lines.append(
            f"  ± {_g(interval.get('half_width', interval.get('high')))} at "
            f"{100 * interval.get('confidence', 0.95):g}% ({interval.get('method', '')})"
        )
    elif bins is None:
        lines.append(f"  {_g(document.get('released'))}, {_interval(document['interval'])}")
    noise = [f"Δ = {_g(document['sensitivity'])}"] if "sensitivity" in document else []
    if "noise_scale" in document:
        noise.append(f"noise scale {_g(document['noise_scale'])}")
    if document.get("threshold") is not None:
        noise.append(f"threshold τ = {document['threshold']}")
    if noise:
        lines.append("Noise: discrete Laplace, " + ", ".join(noise))
    unit = document.get("privacy_unit") or document.get("unit")
    if isinstance(unit, dict) and unit.get("description"):
        lines.append(f"Unit: {unit['description']}")
    elif isinstance(unit, str):
        lines.append(f"Unit: {unit}")
    lines.append(privacy_line(document))
    return lines
