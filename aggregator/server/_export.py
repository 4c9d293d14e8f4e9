"""ExportReports without the transport: a survey's stored batches, joined into chunks."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator

from deniable.shared.errors import ResourceExhausted

__all__ = ["CHUNK_BYTES", "MAX_EXPORTS", "ExportSlots", "export_chunks"]

CHUNK_BYTES = 1 << 20  # an ExportReportsResponse holds about this much (a larger batch alone)
MAX_EXPORTS = 4
"""Exports that read the database at once: on PostgreSQL each holds a pooled connection
(as many as the daemon's workers, 16 by default) for as long as it runs, so a handful of
slow readers must not take the connections that reports are stored with."""


class ExportSlots:
    """At most ``limit`` exports running at once; the next is refused, never queued.

    Example:
        >>> slots = ExportSlots(1)
        >>> first = slots.held(iter([b"a", b"b"]), "s1")
        >>> next(first)
        b'a'
        >>> next(slots.held(iter([b"c"]), "s1"))
        Traceback (most recent call last):
        ...
        deniable.shared.errors.ResourceExhausted: ExportReports: 1 export is running, the most...
        >>> first.close()
        >>> next(slots.held(iter([b"c"]), "s1"))
        b'c'
    """

    def __init__(self, limit: int = MAX_EXPORTS) -> None:
        self.limit = limit
        self.running = 0
        self._lock = threading.Lock()

    def held(self, chunks: Iterator[bytes], survey_id: str) -> Generator[bytes, None, None]:
        """``chunks`` holding a slot from their first read until they end or are closed.

        Raises:
            ResourceExhausted: ``limit`` exports are running (at the first read, before
                any database read of this one).
        """
        with self._lock:
            if self.running >= self.limit:
                many = f"{self.limit} export is" if self.limit == 1 else f"{self.limit} exports are"
                raise ResourceExhausted(
                    f"ExportReports: {many} running, the most this daemon runs at once; "
                    f"export survey {survey_id!r} again when one has finished"
                )
            self.running += 1
        try:
            yield from chunks
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            with self._lock:
                self.running -= 1


def export_chunks(
    rows: Iterator[bytes],
    survey_id: str,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_message_bytes: int | None = None,
) -> Generator[bytes, None, None]:
    """``rows`` (stored batches) joined into serialized ``ExportReportsResponse`` messages.

    A stored batch is the serialized ``SubmitReportsRequest`` that holds its reports in
    field 1 and nothing else, as ``ExportReportsResponse`` does: joined whole batches are
    therefore a serialized ``ExportReportsResponse`` holding their reports in order. A
    chunk holds batches while it stays within ``chunk_bytes``; a larger batch goes alone.
    ``rows`` is read only as chunks are asked for, and closed with this iterator.

    Raises:
        ResourceExhausted: a stored batch is larger than ``max_message_bytes``, the
            largest message the daemon may send (None: no limit), as when it was stored
            by a daemon configured with a larger ``--max-message-bytes``.
    """
    limit = max_message_bytes
    target = chunk_bytes if limit is None else min(chunk_bytes, limit)
    held: list[bytes] = []
    size = 0
    try:
        for row in rows:
            if limit is not None and len(row) > limit:
                raise ResourceExhausted(
                    f"survey_id: survey {survey_id!r} holds a stored batch of {len(row):,} "
                    f"bytes, more than this daemon sends in one message ({limit:,}, "
                    "--max-message-bytes); export it through a daemon with a larger limit"
                )
            if held and size + len(row) > target:
                yield b"".join(held)
                held, size = [], 0
            held.append(row)
            size += len(row)
        if held:
            yield b"".join(held)
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()  # ends the storage's read now, not when the iterator is collected
