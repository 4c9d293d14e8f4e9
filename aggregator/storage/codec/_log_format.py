"""The encodings of a stored batch (a log row): compact uniform yes/no, and canonical.

A log row holds the reports one commit added to one survey, in one of these encodings,
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
- **compact hex** (first byte ``0x02``): compact uniform for ids made of lowercase hex
  digits only, of even length, which is what the participant client generates (32 of
  them). The same layout, but each id takes ``id_length / 2`` bytes, two digits per byte
  (the first in the high four bits): 17 instead of 33 KB for 1000 reports.

All encodings give the same ids and payloads (a report's canonical encoding without its
id field) and expand to the same canonical ``SubmitReportsRequest``.
"""

from __future__ import annotations

import struct

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CANONICAL",
    "COMPACT",
    "COMPACT_HEX",
    "COMPACT_UNIFORM",
    "LogFormatError",
    "compact_columns",
    "compact_uniform",
    "expand",
    "varint",
]

CANONICAL = 0x0A  # the tag of SubmitReportsRequest.reports: field 1, length-delimited
COMPACT_UNIFORM = 0x01
COMPACT_HEX = 0x02
COMPACT = frozenset({COMPACT_UNIFORM, COMPACT_HEX})  # the first bytes of compact rows
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
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


def compact_uniform(
    stem: bytes,
    id_length: int,
    ids: bytes | memoryview,
    bits: bytes | memoryview,
    *,
    hex_packed: bool = False,
) -> bytes:
    """The compact row of reports sharing ``stem``: ``ids`` back to back, one bit byte each.

    With ``hex_packed``, ``ids`` holds each id's hex digits packed two to a byte, and
    ``id_length`` is the number of digits (see the module docstring). ``ids`` and ``bits``
    may be any contiguous buffers of bytes.
    """
    marker = COMPACT_HEX if hex_packed else COMPACT_UNIFORM
    id_bytes, bit_bytes = memoryview(ids).cast("B"), memoryview(bits).cast("B")
    header = _HEADER.pack(marker, len(bit_bytes), id_length, len(stem))
    return b"".join([header, stem, id_bytes, bit_bytes])


def unpack_hex(packed: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Ids packed two hex digits to a byte, as (count, 2 * width) lowercase ASCII digits."""
    out = np.empty((packed.shape[0], 2 * packed.shape[1]), dtype=np.uint8)
    out[:, 0::2] = _HEX_DIGITS[packed >> 4]
    out[:, 1::2] = _HEX_DIGITS[packed & 0x0F]
    return out


def compact_columns(row: bytes) -> tuple[bytes, NDArray[np.uint8], NDArray[np.uint8]]:
    """A compact row's stem, ids as a (count, id_length) array, and bits.

    Raises:
        LogFormatError: the row is truncated, too long, or holds a bit other than 0 or 1.
    """
    if len(row) < _HEADER.size:
        raise LogFormatError("compact log row: truncated header")
    marker, count, id_length, stem_length = _HEADER.unpack_from(row)
    packed = marker == COMPACT_HEX
    if marker not in COMPACT or id_length == 0 or (packed and id_length % 2):
        raise LogFormatError("compact log row: bad header")
    width = id_length // 2 if packed else id_length
    ids_at = _HEADER.size + stem_length
    bits_at = ids_at + count * width
    if len(row) != bits_at + count:
        raise LogFormatError(
            f"compact log row: {len(row)} bytes, the header implies {bits_at + count}"
        )
    buffer = np.frombuffer(row, dtype=np.uint8)
    ids = buffer[ids_at:bits_at].reshape(count, width)
    if packed:
        ids = unpack_hex(ids)
    bits = buffer[bits_at:]
    if (bits > 1).any():
        raise LogFormatError("compact log row: a bit other than 0 or 1")
    return bytes(row[_HEADER.size : ids_at]), ids, bits


def expand(row: bytes) -> bytes:
    """A log row as the canonical ``SubmitReportsRequest`` encoding of its reports."""
    if not row or row[0] not in COMPACT:
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
