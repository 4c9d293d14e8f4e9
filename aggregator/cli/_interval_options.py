"""``--confidence`` and ``--method``, as every command that shows estimates takes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deniable.shared.stats import MAX_CONFIDENCE, METHODS

__all__ = ["interval_kind_options", "interval_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _checked(_ctx: click.Context, _param: click.Parameter, confidence: float) -> float:
    """Refuse a confidence outside (0, 1 - 1e-9] in one line (exit 2), naming it."""
    if not 0.0 < confidence <= MAX_CONFIDENCE:
        raise click.UsageError(
            f"confidence must be in (0, {MAX_CONFIDENCE!r}] (at most 1 - 1e-9), got {confidence}"
        )
    return confidence


def interval_options(function: F) -> F:
    """Add ``--confidence C`` (checked when parsed) and ``--method M`` of the intervals."""
    function = click.option(
        "--method", type=click.Choice(list(METHODS)), default="clopper-pearson", show_default=True
    )(function)
    return click.option(
        "--confidence",
        type=float,
        default=0.95,
        show_default=True,
        callback=_checked,
        help="Confidence level of the intervals, 0 < C <= 0.999999999 (1 - 1e-9).",
    )(function)


def interval_kind_options(function: F) -> F:
    """Add ``--simultaneous`` and ``--anytime``: which intervals the daemon computes."""
    function = click.option(
        "--anytime",
        is_flag=True,
        help="Anytime-valid intervals (confidence sequences): valid however often you look "
        "and whenever you stop a live survey; wider than fixed-n intervals.",
    )(function)
    return click.option(
        "--simultaneous",
        is_flag=True,
        help="Multiple choice: intervals that cover every option at once (Bonferroni, "
        "tightened to the simplex), not each separately; wider.",
    )(function)
