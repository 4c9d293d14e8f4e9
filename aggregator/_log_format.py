"""The two encodings of a stored batch (a log row): compact uniform yes/no, and canonical.

A log row holds the reports one commit added to one survey, in one of two encodings,
told apart by the first byte:

- **canonical** (first byte ``0x0A``): a serialized ``SubmitReportsRequest`` holding the
  reports, each in its canonical (deterministic) protobuf encoding. Any batch can be
  stored this way.
- **compact uniform** (first byte ``0x01``): for reports that are identical outside
  ``report_id`` and ``bit`` and have ids of one length, which is what a client's batch
  of yes/no answers looks like. It keeps the shared bytes once and the ids and bits as
  columns, about 40% of the canonical size, so a commit writes and fsyncs less::

      0x01 | count: u32 | id_length: u16 | stem_length: u32 | stem | ids | bits

  Integers are little-endian. ``stem`` is a report's canonical encoding between its id
  and its bit value (survey, question, mechanism and the ``bit`` tag), ``ids`` the
  ``count`` ids of ``id_length`` ASCII bytes back to back, ``bits`` one byte (0 or 1)
  per report. Each report's canonical encoding is ``0x0A varint(id_length) id stem bit``.

Both encodings give the same ids and payloads (a report's canonical encoding without its
id field) and expand to the same canonical ``SubmitReportsRequest``.
"""

from __future__ import annotations

import struct

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CANONICAL",
    "COMPACT_UNIFORM",
    "LogFormatError",
    "compact_columns",
    "compact_uniform",
    "expand",
    "varint",
]

CANONICAL = 0x0A  # the tag of SubmitReportsRequest.reports: field 1, length-delimited
COMPACT_UNIFORM = 0x01
_HEADER = struct.Struct("<BIHI")  # marker, count, id_length, stem_length
_ID_TAG = 0x0A  # Report.report_id: field 1, length-delimited


class LogFormatError(ValueError):
    """A log row is not a valid compact row (the database is damaged)."""


def varint(value: int) -> bytes:
    """``value`` as a protobuf base-128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_uniform(stem: bytes, id_length: int, ids: bytes, bits: bytes) -> bytes:
    """The compact row of reports sharing ``stem``: ``ids`` back to back, one bit byte each."""
    return _HEADER.pack(COMPACT_UNIFORM, len(bits), id_length, len(stem)) + stem + ids + bits


def compact_columns(row: bytes) -> tuple[bytes, NDArray[np.uint8], NDArray[np.uint8]]:
    """A compact row's stem, ids as a (count, id_length) array, and bits.

    Raises:
        LogFormatError: the row is truncated, too long, or holds a bit other than 0 or 1.
    """
    if len(row) < _HEADER.size:
        raise LogFormatError("compact log row: truncated header")
    marker, count, id_length, stem_length = _HEADER.unpack_from(row)
    if marker != COMPACT_UNIFORM or id_length == 0:
        raise LogFormatError("compact log row: bad header")
    ids_at = _HEADER.size + stem_length
    bits_at = ids_at + count * id_length
    if len(row) != bits_at + count:
        raise LogFormatError(
            f"compact log row: {len(row)} bytes, the header implies {bits_at + count}"
        )
    buffer = np.frombuffer(row, dtype=np.uint8)
    ids = buffer[ids_at:bits_at].reshape(count, id_length)
    bits = buffer[bits_at:]
    if (bits > 1).any():
        raise LogFormatError("compact log row: a bit other than 0 or 1")
    return bytes(row[_HEADER.size : ids_at]), ids, bits


def expand(row: bytes) -> bytes:
    """A log row as the canonical ``SubmitReportsRequest`` encoding of its reports."""
    if not row or row[0] != COMPACT_UNIFORM:
        return bytes(row)
    stem, ids, bits = compact_columns(row)
    count, id_length = ids.shape
    id_field = bytes([_ID_TAG]) + varint(id_length)
    record_length = len(id_field) + id_length + len(stem) + 1
    head = bytes([CANONICAL]) + varint(record_length) + id_field
    out = np.empty((count, len(head) + record_length - len(id_field)), dtype=np.uint8)
    at = len(head)
    out[:, :at] = np.frombuffer(head, dtype=np.uint8)
    out[:, at : at + id_length] = ids
    out[:, at + id_length : -1] = np.frombuffer(stem, dtype=np.uint8)
    out[:, -1] = bits
    return out.tobytes()
