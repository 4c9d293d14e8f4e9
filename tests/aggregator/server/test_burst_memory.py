"""Memory under a burst: what gRPC reads before the service sees a request is bounded.

The daemon announces a fixed per-call window (not the 4 MiB and more of gRPC's BDP
probing, which let every call send its whole request before the daemon took it up) and a
cap on calls per connection, closes connections beyond its cap, grows under a burst by
what its limits allow, and frees a refused request at once rather than when the cyclic
garbage collector runs. bench/burst_memory.py measures the full-size burst.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._limits import ServerLimits
from deniable.aggregator.server._servicer import INLINE_BYTES
from deniable.aggregator.storage import open_storage
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server._http2 import (
    INITIAL_WINDOW_SIZE,
    MAX_CONCURRENT_STREAMS,
    server_settings,
)
from tests.conftest import ADMIN_TOKEN, start_daemon

SUBMIT = "/deniable.v1.Aggregator/SubmitReports"
HANG_GUARD = 60.0  # seconds; only so that a broken server fails the test instead of hanging
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]  # else a process's channels share one


@pytest.fixture
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    storage = open_storage(f"sqlite:///{tmp_path / 'burst.db'}")
    running = start_server(storage, ADMIN_TOKEN, "127.0.0.1:0", limits=request.param)
    yield running
    running.stop(grace=0)


@pytest.mark.parametrize("limited", [ServerLimits()], indirect=True)
def test_the_daemon_announces_a_fixed_window_and_its_calls_per_connection(
    limited: RunningServer,
) -> None:
    settings = server_settings(limited.port)
    assert settings is not None
    assert settings[MAX_CONCURRENT_STREAMS] == limited.limits.calls_per_connection == 16
    assert settings[INITIAL_WINDOW_SIZE] == limited.limits.stream_window_bytes == 16 * 1024
    options = dict(limited.limits.channel_options())
    assert options["grpc.http2.bdp_probe"] == 0  # else gRPC grows the window to 4 MiB or more


@pytest.mark.parametrize("limited", [ServerLimits(max_connections=2)], indirect=True)
def test_connections_beyond_the_limit_are_closed_at_once(limited: RunningServer) -> None:
    channels = [grpc.insecure_channel(limited.address, options=OWN_CONNECTION) for _ in "ab"]
    try:
        for channel in channels:
            grpc.channel_ready_future(channel).result(timeout=HANG_GUARD)
        assert server_settings(limited.port) is None  # a third: closed, no SETTINGS
        channels.pop().close()
        deadline = time.monotonic() + HANG_GUARD  # the server sees the close a moment later
        while (settings := server_settings(limited.port)) is None:
            assert time.monotonic() < deadline
        assert settings[MAX_CONCURRENT_STREAMS] == 16
    finally:
        for channel in channels:
            channel.close()


def _rss_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_a_burst_of_big_requests_is_not_read_into_memory_beyond_the_limits(
    tmp_path: Path,
) -> None:
    """48 calls of 3 MB at once, 4 taken up: the daemon grows by what the limits allow.

    The calls it takes up hold their request (read by gRPC, then copied once); each of the
    others may have sent its window before it is refused; far from the 144 MB sent.
    """
    calls, size = 48, 3_000_000
    limits = ServerLimits(max_concurrent_rpcs=4, workers=1, max_inflight_bytes=4 << 20)
    daemon = start_daemon(tmp_path, args=["--max-concurrent-rpcs", "4", "--workers", "1",
                                          "--max-inflight-bytes", str(4 << 20)])  # fmt: skip
    channels = [grpc.insecure_channel(daemon.address, options=OWN_CONNECTION) for _ in range(calls)]
    try:
        for channel in channels:
            grpc.channel_ready_future(channel).result(timeout=HANG_GUARD)
        pid = daemon.process.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # restart the peak (VmHWM) from now
        before = _rss_bytes(pid, "VmRSS")
        junk = b"\x00" * size  # not a valid batch: refused once read, nothing stored
        submits: list[grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]] = [
            channel.unary_unary(SUBMIT, None, pb.SubmitReportsResponse.FromString)
            for channel in channels
        ]
        futures = [call.future(junk, timeout=HANG_GUARD) for call in submits]
        codes = [future.exception().code() for future in futures]  # type: ignore[union-attr]
        grown = _rss_bytes(pid, "VmHWM") - before
    finally:
        for channel in channels:
            channel.close()
        daemon.stop()
    assert set(codes) <= {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
    taken_up = limits.max_concurrent_rpcs * size * 2  # read by gRPC, then copied once
    windows = calls * limits.stream_window_bytes
    slack = 40 << 20  # allocator and thread arenas, the calls' bookkeeping
    assert grown < taken_up + windows + slack < calls * size


@pytest.mark.parametrize("size", [1_000_000, 2_000_000], ids=["on-the-loop", "on-a-worker"])
def test_a_refused_request_is_freed_without_the_garbage_collector(
    tmp_path: Path, size: int
) -> None:
    """grpc.aio keeps a call's abort exception; its traceback must not keep the request.

    A request up to INLINE_BYTES is decoded on the event loop, a larger one on a worker,
    whose failure comes back through a future.
    """
    assert (size <= INLINE_BYTES) == (size == 1_000_000)
    storage = open_storage(f"sqlite:///{tmp_path / 'burst.db'}")
    running = start_server(storage, ADMIN_TOKEN, "127.0.0.1:0")
    junk = b"\xff" * size  # not a SubmitReportsRequest: INVALID_ARGUMENT
    tracemalloc.start()
    gc.disable()
    try:
        with grpc.insecure_channel(running.address) as channel:
            submit: grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
            submit = channel.unary_unary(SUBMIT, None, pb.SubmitReportsResponse.FromString)
            with pytest.raises(grpc.RpcError):
                submit(junk, timeout=HANG_GUARD)  # warm up
            before, _ = tracemalloc.get_traced_memory()
            for _ in range(20):
                with pytest.raises(grpc.RpcError) as refused:
                    submit(junk, timeout=HANG_GUARD)
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            after, _ = tracemalloc.get_traced_memory()
    finally:
        gc.enable()
        tracemalloc.stop()
        running.stop(grace=0)
    assert after - before < 3 * len(junk)  # 20 refused requests kept would be 20 MB
