"""``estimate --watch``: refreshes as reports arrive, JSON Lines, plain text off a tty, Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deniable.aggregator.cli.estimate import _watch
from deniable.aggregator.cli.estimate._command import estimate_command
from deniable.aggregator.server._lifecycle import RunningServer
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import ADMIN_TOKEN, BIN, Daemon, binary_question


class ReportsArrive:
    """A sleep that, instead of waiting, submits 40 more reports: n grows between refreshes."""

    def __init__(self, client: AggregatorClient, survey: pb.Survey) -> None:
        self.client, self.survey = client, survey
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        batch = f"b{len(self.slept)}-"
        self.client.submit_reports(reports(self.survey, "q1", 40, batch))


def _watch_in_process(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[str, list[float]]:
    with AggregatorClient(server.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = admin.create_survey("Live", [binary_question("q1"), binary_question("q2")])
        admin.submit_reports(reports(survey, "q1", 40, "a"))
        arrive = ReportsArrive(admin, survey)
        ticks = iter(range(1000))
        monkeypatch.setattr(
            _watch,
            "CLOCK",
            _watch.Clock(
                sleep=arrive,
                monotonic=lambda: float(next(ticks)),  # each refresh "takes" 1 s
                now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            ),
        )
        out = CliRunner().invoke(
            estimate_command, [survey.id, "--server", server.address, "--watch", *args]
        )
    assert out.exit_code == 0, out.output
    return out.output, arrive.slept


def test_json_lines_one_per_refresh_as_reports_arrive(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    output, slept = _watch_in_process(server, monkeypatch, "3", "--count", "3", "--json")
    lines = output.splitlines()
    assert len(lines) == 3
    documents = [json.loads(line) for line in lines]
    assert [d["refresh"] for d in documents] == [1, 2, 3]
    assert [d["reports"] for d in documents] == [40, 80, 120]
    assert [d["estimates"][0]["n"] for d in documents] == [40, 80, 120]
    assert all(d["estimates"][1] == {"question_id": "q2", "n": 0} for d in documents)
    assert all(d["estimates"][0]["anytime"] for d in documents)  # watching: anytime-valid
    assert all(d["time"] == "2026-01-02T03:04:05+00:00" for d in documents)
    assert slept == [2.0, 2.0]  # 3 s apart, each refresh having taken 1 s; none after the last


def test_off_a_terminal_refreshes_follow_one_another_without_escape_codes(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    output, slept = _watch_in_process(server, monkeypatch, "--count", "2")  # default interval
    assert "\x1b" not in output
    assert slept == [_watch.DEFAULT_INTERVAL - 1]
    headers = [line for line in output.splitlines() if line.startswith("Watching")]
    assert len(headers) == 2
    assert "refresh 1 of 2 at 2026-01-02T03:04:05+00:00" in headers[0]
    assert "anytime-valid intervals" in headers[0]
    assert "Live (" in output
    tables = output.split("Watching")[1:]
    assert ": 40 reports" in tables[0]
    assert ": 80 reports" in tables[1]
    assert "anytime-valid" in tables[1]  # the question's note: the interval it used


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--watch", "0"), "Invalid value for --watch: must be a positive number of seconds, "
         "got 0"),
        (("--watch", "-2"), "'-2'"),  # click reads it as an option: still named
        (("--watch", "nan"), "got nan"),
        (("--watch", "soon"), "'soon' is not a valid float"),
        (("--count", "2"), "--count needs --watch"),
        (("--watch", "1", "--count", "0"), "'--count'"),
        (("--watch", "1", "--count", "0"), "0 is not in the range x>=1"),
    ],
)  # fmt: skip
def test_bad_watch_values_exit_2_naming_them(args: tuple[str, ...], message: str) -> None:
    # Refused before any connection: nothing listens on this port.
    out = CliRunner().invoke(estimate_command, ["s1", "--server", "127.0.0.1:9", *args])
    assert out.exit_code == 2, out.output
    assert message in out.output


def _read_until(leader: int, wanted: bytes, count: int) -> bytes:
    """Read the terminal until ``wanted`` appeared ``count`` times (bounded: 60 s, 1 MiB)."""
    seen = b""
    deadline = time.monotonic() + 60
    while seen.count(wanted) < count and time.monotonic() < deadline and len(seen) < 2**20:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                seen += os.read(leader, 65536)
            except OSError:
                break
    return seen


def test_ctrl_c_on_a_terminal_exits_0_without_a_traceback(daemon: Daemon, tmp_path: Path) -> None:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = admin.create_survey("Live", [binary_question("q1")])
        admin.submit_reports(reports(survey, "q1", 20, "a"))
    leader, follower = pty.openpty()
    stderr = tmp_path / "stderr"
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "estimate", survey.id, "--server", daemon.address,
             "--watch", "0.05"],
            stdin=follower, stdout=follower, stderr=errors, env=daemon.env,
        )  # fmt: skip
    os.close(follower)
    try:
        shown = _read_until(leader, b"Watching", 2)
        assert shown.count(_watch.CLEAR.encode()) >= 2, shown  # redrawn in place
        assert b"Ctrl-C to stop" in shown
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    assert "Traceback" not in stderr.read_text()
    assert "Aborted" not in stderr.read_text()
    # Into a pipe with --json: each refresh's line is flushed at once, read while it runs;
    # a reader that stops reading (| head -2) ends it as Ctrl-C does.
    piped = subprocess.Popen(
        [str(BIN / "deniable-aggregator"), "estimate", survey.id, "--server", daemon.address,
         "--watch", "0.05", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=daemon.env,
    )  # fmt: skip
    try:
        assert piped.stdout is not None
        lines = _read_until(piped.stdout.fileno(), b"\n", 2).splitlines()
        assert [json.loads(line)["refresh"] for line in lines[:2]] == [1, 2]
        piped.stdout.close()
        assert piped.wait(timeout=30) == 0
        assert piped.stderr is not None
        assert b"Traceback" not in piped.stderr.read()
    finally:
        if piped.poll() is None:
            piped.kill()
            piped.wait()


def _call(interrupt: _watch.DeferredInterrupt, signals: int, done: list[str]) -> None:
    """A call during which ``signals`` Ctrl-Cs come; what it got to do goes in ``done``."""
    with interrupt.call():
        for _ in range(signals):
            interrupt.handler(signal.SIGINT, None)
            done.append("went on")
        done.append("ended")


def test_ctrl_c_during_a_call_is_raised_once_the_call_has_ended() -> None:
    """A signal handler raising inside a gRPC call can deadlock the channel's close."""
    interrupt = _watch.DeferredInterrupt()
    quiet: list[str] = []
    _call(interrupt, 0, quiet)
    assert quiet == ["ended"]
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        _call(interrupt, 1, done)
    assert done == ["went on", "ended"]  # deferred: the call ran to its end, then it was raised
    assert not interrupt.in_call
    with pytest.raises(KeyboardInterrupt):
        interrupt.handler(signal.SIGINT, None)  # between calls: at once


def test_a_second_ctrl_c_during_a_call_is_raised_at_once() -> None:
    interrupt = _watch.DeferredInterrupt()
    seen: list[str] = []

    def twice() -> None:
        with interrupt.call():
            interrupt.handler(signal.SIGINT, None)
            seen.append("first deferred")
            interrupt.handler(signal.SIGINT, None)
            seen.append("second deferred")

    with pytest.raises(KeyboardInterrupt):
        twice()
    assert seen == ["first deferred"]
