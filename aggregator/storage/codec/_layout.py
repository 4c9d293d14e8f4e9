"""The byte layout of a canonical report frame, and reading values from frames that share it.

A *frame* is one ``reports`` entry of a ``SubmitReportsRequest``: the tag ``0x0A``, the
report's length as a varint, and the report. In a report's canonical encoding its fields
come in field-number order, so the id comes first and the value last. A :class:`Layout`
is taken from one frame that parses, is canonical and is structurally valid; another
frame of the same size has the same layout when all its bytes outside the id and the
value's own bytes (its *holes*) are equal to the template's. Such a frame holds the
template's survey, question and mechanism, an id of the template's length, and a value of
the template's kind whose encoding takes the same bytes, so reading the id and the value
at fixed offsets reads what protobuf reads. Values are then checked to be canonical
(:func:`read_values`), so that the frame's bytes are exactly its canonical encoding.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from numpy.typing import NDArray

from deniable.aggregator.storage.codec._log_format import varint
from deniable.shared.errors import InvalidArgument
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["REPORTS_TAG", "Layout", "check_structure", "layout_of", "read_values"]

REPORTS_TAG = 0x0A  # SubmitReportsRequest.reports and Report.report_id: field 1, bytes
REPORT_ID_PATTERN = "[A-Za-z0-9_.-]{1,128}"
_REPORT_ID = re.compile(REPORT_ID_PATTERN)
_UINT32_LIMIT = 1 << 32
_FIXED64 = {0x09: "a", 0x11: "b"}  # HashedOption.a and .b: fixed64, explicit presence
_HASHED_VALUE_TAG = 0x18  # HashedOption.value: field 3, varint (older clients)
_HASHED_FIXED_TAG = 0x25  # HashedOption.value_fixed: field 4, fixed32, explicit presence
_FIXED_WIDTH = ("bit", "option", "number", "option_fixed")  # the value's bytes end the frame
_CACHE: OrderedDict[bytes, Layout] = OrderedDict()  # by the frame's bytes outside its id
_CACHE_SIZE = 256


def check_structure(report: pb.Report, index: int) -> None:
    """Raise InvalidArgument naming ``reports[index]`` and the field if a report is malformed."""
    where = f"reports[{index}]"
    if not _REPORT_ID.fullmatch(report.report_id):
        raise InvalidArgument(
            f"{where}.report_id: {report.report_id[:40]!r} must match {REPORT_ID_PATTERN}"
        )
    if not report.survey_id:
        raise InvalidArgument(f"{where}.survey_id: missing")
    if not report.question_id:
        raise InvalidArgument(f"{where}.question_id: missing")
    if not report.HasField("mechanism"):
        raise InvalidArgument(f"{where}.mechanism: missing")
    kind = report.WhichOneof("value")
    if kind is None:
        raise InvalidArgument(f"{where}.value: missing (bit, option, bits, hashed or number)")
    if kind == "hashed" and report.hashed.HasField("value_fixed") and report.hashed.value:
        raise InvalidArgument(
            f"{where}.hashed.value: {report.hashed.value} sent together with "
            "hashed.value_fixed; a report carries one hash value"
        )


@dataclass(frozen=True)
class Layout:
    """Where the id and the value's bytes sit in frames shaped like a template frame.

    Attributes:
        key: (survey, question, serialized mechanism, value field): the decoder's group.
        id_start, id_end: the id's bytes within the frame.
        holes: (start, end, name) of each of the value's variable byte ranges.
        mask: 0xFF at every byte that must equal the template's, 0 at the id and holes
            (0xFE at a bit's byte: it must be 0 or 1).
        stem: the template frame with its id and holes zeroed.
    """

    key: tuple[str, str, bytes, str]
    id_start: int
    id_end: int
    holes: tuple[tuple[int, int, str], ...]
    mask: NDArray[np.uint8]
    stem: NDArray[np.uint8]

    @property
    def kind(self) -> str:
        """The value field: bit, option, option_fixed, bits, hashed, number or encoded."""
        return self.key[3]


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7


def layout_of(frame: bytes) -> tuple[Layout, pb.Report] | None:
    """The layout of one frame and its report, or None unless it is canonical and valid.

    Layouts are cached by the frame's bytes outside its id: frames that agree there and
    hold a valid id have the same layout (the id's own bytes are checked apart).
    """
    try:
        length, start = _varint_at(frame, 1)
        id_length, id_start = _varint_at(frame, start + 1)
    except IndexError:
        return None
    body = frame[start:]
    report = pb.Report()
    try:
        report.ParseFromString(body)
    except DecodeError:
        return None
    key = frame[:id_start] + frame[id_start + id_length :]
    layout = _CACHE.get(key)
    if layout is not None:
        if report.report_id and len(report.report_id) == id_length:
            return layout, report
        return None
    layout = _analyze(frame, report, start, length)
    if layout is None:
        return None
    _CACHE[key] = layout
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return layout, report


def _analyze(frame: bytes, report: pb.Report, start: int, length: int) -> Layout | None:
    body = frame[start:]
    if frame[0] != REPORTS_TAG or start + length != len(frame) or frame[1:start] != varint(length):
        return None
    report.DiscardUnknownFields()
    if report.SerializeToString(deterministic=True) != body:
        return None  # unknown fields, or not canonical: the layout is not certain
    try:
        check_structure(report, 0)
    except InvalidArgument:
        return None
    kind = report.WhichOneof("value")
    assert kind is not None
    tail = pb.Report(**{kind: getattr(report, kind)}).SerializeToString(deterministic=True)
    value_at = len(frame) - len(tail)
    holes = _holes(kind, frame, value_at)
    if holes is None:
        return None
    id_start = start + 1 + len(varint(len(report.report_id)))
    id_end = id_start + len(report.report_id)
    mask = np.full(len(frame), 0xFF, dtype=np.uint8)
    mask[id_start:id_end] = 0
    for begin, end, _ in holes:
        mask[begin:end] = 0
    if kind == "bit":  # a bit's byte is checked with the stem: all but its last bit are 0
        mask[holes[0][0]] = 0xFE
    stem = np.frombuffer(frame, dtype=np.uint8) & mask
    mechanism = report.mechanism.SerializeToString(deterministic=True)
    key = (report.survey_id, report.question_id, mechanism, kind)
    return Layout(key, id_start, id_end, tuple(holes), mask, stem)


def _holes(kind: str, frame: bytes, at: int) -> list[tuple[int, int, str]] | None:
    """The value's variable bytes, given its field's tag at ``at`` (the frame's last field)."""
    if kind in _FIXED_WIDTH:  # a tag and the value: a varint, or fixed-width
        return [(at + 1, len(frame), kind)]
    _, data_at = _varint_at(frame, at + 1)  # bits, encoded, hashed: length-delimited
    if kind != "hashed":
        return [(data_at, len(frame), kind)]
    holes, pos = [], data_at
    for tag, name in _FIXED64.items():
        if pos < len(frame) and frame[pos] == tag:
            holes.append((pos + 1, pos + 9, name))
            pos += 9
    if pos < len(frame):
        if frame[pos] == _HASHED_VALUE_TAG:
            holes.append((pos + 1, len(frame), "value"))
        elif frame[pos] == _HASHED_FIXED_TAG and pos + 5 == len(frame):
            holes.append((pos + 1, len(frame), "value_fixed"))
        else:
            return None
    return holes


def read_values(frames: NDArray[np.uint8], layout: Layout) -> Any | None:
    """The values of frames that match ``layout``, in the decoder's column form.

    None if a value is not canonically encoded (a bit other than 0 or 1, an overlong or
    out-of-range varint, an explicit zero ``hashed.value``): the exact path decides those.
    """
    kind = layout.kind
    if kind == "bit":  # 0 or 1 already: see the mask
        return frames[:, layout.holes[0][0]].copy()
    if kind == "option":
        begin, end, _ = layout.holes[0]
        return _varints(frames[:, begin:end], nonzero=False)
    if kind == "option_fixed":
        begin, end, _ = layout.holes[0]
        return np.ascontiguousarray(frames[:, begin:end]).view("<u4")[:, 0].astype(np.int64)
    if kind == "number":
        begin, end, _ = layout.holes[0]
        return np.ascontiguousarray(frames[:, begin:end]).view("<f8")[:, 0].astype(np.float64)
    if kind in ("bits", "encoded"):
        begin, end, _ = layout.holes[0]
        width = end - begin
        blob = frames[:, begin:end].tobytes()
        return (
            [blob[i : i + width] for i in range(0, len(blob), width)]
            if width
            else [b""] * len(frames)
        )
    return _hashed(frames, layout)


def _hashed(frames: NDArray[np.uint8], layout: Layout) -> NDArray[np.uint64] | None:
    """(a, b, value) columns; a field the template omits is 0.

    a, b and value_fixed have explicit presence, so any value is canonical, 0 included; the
    older varint ``value`` has none, so an explicit 0 is not.
    """
    out = np.zeros((len(frames), 3), dtype=np.uint64)
    for begin, end, name in layout.holes:
        if name == "value":
            column = _varints(frames[:, begin:end], nonzero=True)
            if column is None:
                return None
            out[:, 2] = column
        elif name == "value_fixed":
            out[:, 2] = np.ascontiguousarray(frames[:, begin:end]).view("<u4")[:, 0]
        else:
            words = np.ascontiguousarray(frames[:, begin:end]).view("<u8")[:, 0]
            out[:, 0 if name == "a" else 1] = words
    return out


def _varints(columns: NDArray[np.uint8], *, nonzero: bool) -> NDArray[np.int64] | None:
    """Canonical uint32 varints of one width, one per row, or None."""
    width = columns.shape[1]
    if not 1 <= width <= 5:
        return None
    last = columns[:, -1]
    if (last >= 0x80).any() or (columns[:, :-1] < 0x80).any():
        return None
    if (width > 1 or nonzero) and not last.all():
        return None  # an overlong encoding (a final zero group), or an explicit zero
    values = np.zeros(len(columns), dtype=np.int64)
    for j in range(width):
        values |= (columns[:, j].astype(np.int64) & 0x7F) << (7 * j)
    if width == 5 and (values >= _UINT32_LIMIT).any():
        return None  # protobuf would truncate it to 32 bits
    return values
