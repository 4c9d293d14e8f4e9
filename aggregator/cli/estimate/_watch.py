"""``estimate --watch``: refresh the estimates in place, as JSON lines, or one after another."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import click

from deniable.aggregator.cli._common import jsonable, remote_errors
from deniable.client import AggregatorClient
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "CLEAR",
    "CLOCK",
    "DEFAULT_INTERVAL",
    "Clock",
    "DeferredInterrupt",
    "check_interval",
    "watch_estimates",
]

DEFAULT_INTERVAL = 5.0
"""Seconds between refreshes for ``--watch`` without a value."""

CLEAR = "\x1b[H\x1b[2J"
"""Cursor home, then clear the screen: each refresh redraws the terminal in place."""

Fetch = Callable[[AggregatorClient], tuple[pb.Survey, list[dict[str, Any]]]]
"""Reads the survey and its estimates (as ``estimate_to_dict`` rows) over one connection."""

Show = Callable[[pb.Survey, list[dict[str, Any]]], None]
"""Prints the estimates as ``estimate`` does."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Clock:
    """Time as the watch loop sees it (tests replace it: no test waits on the wall clock)."""

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = field(default=_utc_now)


CLOCK = Clock()
"""The clock ``estimate --watch`` uses."""


class DeferredInterrupt:
    """Ctrl-C raises KeyboardInterrupt at once, except during a gRPC call: then when it ends.

    gRPC's blocking client can deadlock closing its channel when a signal handler raises
    while a call is in flight (grpc/grpc#19973 and its kin), so the watch loop would hang
    instead of exiting. A second Ctrl-C during the same call raises at once all the same.
    """

    def __init__(self) -> None:
        self.in_call = False
        self.pending = False

    def handler(self, signum: int, frame: object) -> None:
        """The SIGINT handler: raise now, or once the call in flight has ended."""
        if self.in_call and not self.pending:
            self.pending = True
            return
        raise KeyboardInterrupt

    @contextmanager
    def call(self) -> Iterator[None]:
        """Run a gRPC call; a Ctrl-C that came during it is raised once it has ended."""
        self.in_call = True
        try:
            yield
        finally:
            self.in_call = False
        if self.pending:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT so while inside (in the main thread only, as signals require)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self.handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def check_interval(seconds: float) -> float:
    """``--watch SECONDS``: finite and positive (a usage error naming the value otherwise)."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise click.BadParameter(
            f"must be a positive number of seconds, got {seconds:g}", param_hint="--watch"
        )
    return seconds


def watch_estimates(
    server: str,
    tls: TlsConfig | None,
    fetch: Fetch,
    show: Show,
    *,
    survey_id: str,
    interval: float,
    count: int | None,
    as_json: bool,
    clock: Clock | None = None,
    admin_token: str | None = None,
) -> None:
    """Fetch and show the estimates every ``interval`` seconds until Ctrl-C (or ``count``).

    On a terminal each refresh clears the screen and redraws; otherwise (a pipe, a file)
    the refreshes follow one another without escape codes; with ``as_json`` each is one
    JSON document on one line (JSON Lines), flushed at once. Ctrl-C ends it with status 0,
    and so does a reader that stops reading (a closed pipe).
    """
    clock = clock or CLOCK
    terminal = not as_json and sys.stdout.isatty()
    done = 0
    interrupt = DeferredInterrupt()
    try:
        client_of = AggregatorClient(server, admin_token=admin_token, tls=tls)
        with interrupt.installed(), remote_errors(server), client_of as client:
            while count is None or done < count:
                started = clock.monotonic()
                with interrupt.call():
                    survey, results = fetch(client)
                done += 1
                at = clock.now().astimezone(UTC).isoformat(timespec="seconds")
                if as_json:
                    document = {
                        "survey_id": survey.id, "title": survey.title, "reports": survey.reports,
                        "refresh": done, "time": at, "interval": interval, "anytime": True,
                        "estimates": results,
                    }  # fmt: skip
                    click.echo(json.dumps(jsonable(document), allow_nan=False))
                else:
                    if terminal:
                        click.echo(CLEAR, nl=False)
                    of = f" of {count:,}" if count is not None else ""
                    click.echo(
                        f"Watching {visible(survey_id)} every {interval:g} s: refresh {done:,}"
                        f"{of} at {at}; anytime-valid intervals (valid however often you "
                        "look)" + ("; Ctrl-C to stop" if count is None else "")
                    )
                    show(survey, results)
                    if not terminal:
                        click.echo()
                sys.stdout.flush()
                if count is not None and done >= count:
                    break
                clock.sleep(max(0.0, interval - (clock.monotonic() - started)))
    except KeyboardInterrupt:
        if terminal:
            click.echo()  # leave the prompt on a fresh line
    except BrokenPipeError:  # the reader has gone (e.g. | head): stop as Ctrl-C does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush at exit
