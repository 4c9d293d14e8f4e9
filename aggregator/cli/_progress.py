"""Progress of long commands on stderr: a bar with rate and ETA, only on a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TextIO

import click

__all__ = ["Advance", "progress", "shows_progress", "simulation_progress"]

Advance = Callable[[int], None]
"""Called with how many more units are done."""


def shows_progress(as_json: bool, stream: TextIO | None = None) -> bool:
    """Whether to draw a bar: stderr (or ``stream``) is a terminal and output is not --json."""
    stream = sys.stderr if stream is None else stream
    return not as_json and stream.isatty()


def _rate(unit: str, started: float, done: list[int]) -> Callable[[object], str]:
    def show(_item: object) -> str:
        elapsed = time.monotonic() - started
        if elapsed <= 0 or done[0] == 0:
            return ""
        return f"{done[0] / elapsed:,.0f} {unit}/s"

    return show


@contextmanager
def progress(total: int, label: str, unit: str, *, enabled: bool) -> Iterator[Advance]:
    """A bar of ``total`` units on stderr with position, rate, percent and ETA.

    Disabled (``enabled`` false, see :func:`shows_progress`), it draws nothing at all:
    the command's stderr then holds only its own messages.
    """
    if not enabled:
        yield lambda _count: None
        return
    done = [0]
    with click.progressbar(
        length=max(total, 1),
        label=label,
        file=sys.stderr,
        show_eta=True,
        show_percent=True,
        show_pos=True,
        item_show_func=_rate(unit, time.monotonic(), done),
    ) as bar:

        def advance(count: int) -> None:
            done[0] += count
            bar.update(count)

        yield advance


def _ignore(_count: int) -> None:
    """Progress nobody is shown."""


def simulation_progress(
    stack: ExitStack, *, grpc: bool, participants: int, repeats: int, as_json: bool
) -> tuple[Advance, Advance]:
    """A simulation's bar, closed with ``stack``: (per batch of reports sent, per repeat).

    More than one repeat: a bar of the repeats. One repeat over gRPC: a bar of the
    ``participants`` reports as SubmitReports sends them. Else (and off a terminal or with
    --json, see :func:`shows_progress`) nothing: both callbacks do nothing.
    """
    enabled = shows_progress(as_json)
    if repeats > 1:
        return _ignore, stack.enter_context(
            progress(repeats, "simulating", "repeats", enabled=enabled)
        )
    if grpc:
        return stack.enter_context(
            progress(participants, "submitting", "reports", enabled=enabled)
        ), _ignore
    return _ignore, _ignore
