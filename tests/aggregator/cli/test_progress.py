"""The progress bar: drawn with rate and ETA on a terminal, nothing elsewhere or with --json."""

from __future__ import annotations

import io
import os
import pty
import sys

import pytest

from deniable.aggregator.cli._progress import progress, shows_progress


def _drawn(monkeypatch: pytest.MonkeyPatch, enabled: bool) -> str:
    """What a bar of 1,000 units, advanced in 4 steps, writes to a terminal's stderr."""
    leader, follower = pty.openpty()
    terminal = os.fdopen(follower, "w", encoding="utf-8", buffering=1)
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress(1000, "exporting", "reports", enabled=enabled) as advance:
        for _ in range(4):
            advance(250)
    terminal.flush()
    terminal.close()
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end is closed: all has been read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_the_bar_shows_position_percent_and_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn = _drawn(monkeypatch, enabled=True)
    assert "exporting" in drawn
    assert "1000/1000" in drawn
    assert "100%" in drawn
    assert "reports/s" in drawn


def test_disabled_it_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _drawn(monkeypatch, enabled=False) == ""


def test_shown_only_on_a_terminal_and_never_with_json() -> None:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        assert shows_progress(False, terminal)
        assert not shows_progress(True, terminal)
    os.close(leader)
    assert not shows_progress(False, io.StringIO())
