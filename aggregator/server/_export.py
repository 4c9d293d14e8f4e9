"""ExportReports without the transport: a survey's stored batches, joined into chunks."""

from __future__ import annotations

from collections.abc import Generator, Iterator

from deniable.shared.errors import ResourceExhausted

__all__ = ["CHUNK_BYTES", "export_chunks"]

CHUNK_BYTES = 1 << 20  # an ExportReportsResponse holds about this much (a larger batch alone)


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
