"""Sending a server stream: each message read on a worker, written as the client takes it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from typing import Any

import grpc

__all__ = ["send_stream"]

log = logging.getLogger("deniable.aggregator")
Context = grpc.aio.ServicerContext[Any, Any]


async def send_stream(context: Context, executor: Executor, messages: Iterator[bytes]) -> None:
    """Write each of ``messages`` (serialized responses), reading the next on ``executor``.

    One message is read at a time, and only once the previous one was written: gRPC's
    flow control holds the write while the client does not read, so a slow reader
    slows the reads down instead of piling messages up in memory. The event loop never
    reads: ``next`` (which may query the database) runs on a worker.

    When the call ends early (the client cancels or goes away, its deadline passes, or
    the server stops), the task is cancelled: no further message is read, and
    ``messages`` is closed on a worker once the read in progress, if any, is over, which
    ends its database read (PostgreSQL: returns the pooled connection).
    """
    pending: Future[bytes | None] | None = None
    finished = False
    try:
        while True:
            pending = executor.submit(next, messages, None)
            message = await asyncio.wrap_future(pending)
            if message is None:
                finished = True
                return
            await context.write(message)
    finally:
        if not finished:
            _close_later(executor, pending, messages)


def _close_later(
    executor: Executor, pending: Future[bytes | None] | None, messages: Iterator[bytes]
) -> None:
    """Close ``messages`` on a worker, after the read ``pending`` (if running) is over."""

    def close(_: object = None) -> None:
        try:
            executor.submit(_close, messages)
        except RuntimeError:  # the executor is shut down: close here
            _close(messages)

    if pending is None or pending.cancel() or pending.done():
        close()
    else:  # running on a worker: a generator cannot be closed while it runs
        pending.add_done_callback(close)


def _close(messages: Iterator[bytes]) -> None:
    """Close a generator; an error while closing is logged, never raised."""
    try:
        getattr(messages, "close", lambda: None)()
    except Exception as error:  # e.g. the database went away: its read is over anyway
        log.warning("closing a stream's reader failed", extra={"error": str(error)})
