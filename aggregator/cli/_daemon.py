"""What both daemons' commands share: the shutdown grace and waiting for SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import math
import signal
import threading
from types import FrameType

import click

from deniable.shared.errors import InvalidArgument

__all__ = ["check_grace", "wait_for_signal"]


def check_grace(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """``--grace``: a finite number of seconds >= 0 (exit code 2 otherwise)."""
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"--grace {value}: seconds, a finite number >= 0")
    return value


def wait_for_signal(logger: logging.Logger) -> None:
    """Block until SIGTERM or SIGINT arrives (logged); a daemon then stops gracefully."""
    stopping = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        logger.info("signal received", extra={"signal": signal.Signals(number).name})
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stopping.wait(timeout=0.5):
        pass
