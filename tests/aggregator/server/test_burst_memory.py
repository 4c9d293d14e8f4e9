"""Memory under a burst: a refused request is freed at once.

grpc.aio keeps the exception that aborts a call; a request refused after it was read must
not stay alive through it until the cyclic garbage collector runs.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import open_storage
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN

SUBMIT = "/deniable.v1.Aggregator/SubmitReports"
HANG_GUARD = 60.0  # seconds; only so that a broken server fails the test instead of hanging


def test_a_refused_request_is_freed_without_the_garbage_collector(tmp_path: Path) -> None:
    """grpc.aio keeps a call's abort exception; its traceback must not keep the request."""
    storage = open_storage(f"sqlite:///{tmp_path / 'burst.db'}")
    running = start_server(storage, ADMIN_TOKEN, "127.0.0.1:0")
    junk = b"\xff" * 1_000_000  # not a SubmitReportsRequest: INVALID_ARGUMENT from the worker
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
