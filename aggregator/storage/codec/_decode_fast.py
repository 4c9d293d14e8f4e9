"""The decoder's fast path: batches of canonical frames, decoded a template at a time.

A batch qualifies when it is made of ``reports`` entries only (any other field, such as
``enrollment_token``, starts a frame with another tag) and every frame is the canonical
encoding of a valid report without a repeated id. Frames are split by size (one reshape
when all have the size of the first, else a loop over the outer framing only); frames of
one size are matched against templates (:mod:`._layout`): the first unmatched frame
becomes a template, and every frame whose bytes outside the id and value equal it joins
it. Ids, values and duplicates are then checked column-wise with numpy. Whatever does not
fit (another tag, a non-canonical frame, a repeated id, more than ``MAX_TEMPLATES``
shapes) returns None and the exact path decides, naming the first bad report.
"""

from __future__ import annotations

import binascii
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage.codec._ids import (
    IdGroup,
    ReportIds,
    SlicedPayloads,
    UniformPayloads,
    repeated_rows,
)
from deniable.aggregator.storage.codec._layout import REPORTS_TAG, Layout, layout_of, read_values
from deniable.aggregator.storage.codec._log_format import compact_uniform
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_TEMPLATES", "FastBatch", "decode_fast", "same_size_frames"]

MAX_TEMPLATES = 64  # report shapes per batch (question, mechanism, id length, value size)
_LOWER_HEX = b"0123456789abcdef"
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_PERIODS: OrderedDict[tuple[bytes, bytes], tuple[NDArray[np.uint64], NDArray[np.uint64]]] = (
    OrderedDict()
)
_PERIOD_CACHE = 64


@dataclass(frozen=True)
class _Part:
    """Frames that share one layout: their request indices, ascending, and their bytes."""

    layout: Layout
    template: pb.Report
    rows: NDArray[np.intp]
    frames: NDArray[np.uint8]


@dataclass(frozen=True)
class FastBatch:
    """What the fast path read (the decoder wraps it in a ``DecodedBatch``)."""

    report_ids: ReportIds
    payloads: Any
    groups: list[tuple[pb.Report, NDArray[np.intp], Any]]
    encode: Any


Columns = Callable[[int, int], NDArray[np.uint8]]  # bytes [a, b) of every frame, in order


def decode_fast(data: bytes, max_batch: int) -> FastBatch | None:
    """Decode a batch of canonical frames, or None when the exact path must decide."""
    if len(data) < 2 or data[0] != REPORTS_TAG:
        return None
    size, _ = _frame_size(data, 0)
    if size and len(data) % size == 0 and len(data) // size <= max_batch:
        frames = np.frombuffer(data, dtype=np.uint8).reshape(-1, size)
        rows = np.arange(len(frames))
        parts = _templates(rows, frames, MAX_TEMPLATES)  # the headers are part of the stem,
        if parts is not None:  # so matching frames start where the rows do
            return _finish(data, rows * size, None, parts, lambda a, b: frames[:, a:b])
    split = _split(data, max_batch)
    if split is None:
        return None
    starts, sizes, classes, columns = split
    parts = []
    for rows, frames in classes:
        found = _templates(rows, frames, MAX_TEMPLATES - len(parts))
        if found is None:
            return None
        parts.extend(found)
    return _finish(data, starts, sizes, parts, columns)


def _finish(
    data: bytes,
    starts: NDArray[np.intp],
    sizes: NDArray[np.intp] | None,
    parts: list[_Part],
    columns: Columns,
) -> FastBatch | None:
    """Check the ids and values of the matched frames, and assemble the batch.

    ``sizes`` is None when every frame has the same size.
    """
    values = [read_values(part.frames, part.layout) for part in parts]
    if any(value is None for value in values):
        return None
    checked = _report_ids(parts, len(starts), columns)
    if checked is None:
        return None
    report_ids, lower_hex = checked
    groups = _groups(parts, values)
    if len(parts) == 1 and parts[0].layout.kind == "bit":
        bits = cast(NDArray[np.uint8], values[0])
        return _uniform(parts[0], report_ids, groups, bits, lower_hex)
    ends = starts + (parts[0].frames.shape[1] if sizes is None else sizes)
    if len({part.layout.id_end for part in parts}) == 1:
        payload_starts = starts + parts[0].layout.id_end
    else:
        payload_starts = np.empty(len(starts), dtype=np.intp)
        for part in parts:
            payload_starts[part.rows] = starts[part.rows] + part.layout.id_end

    def encode(selected: NDArray[np.intp]) -> bytes:
        if len(selected) == len(starts):
            return data  # canonical frames, and nothing else
        return b"".join([data[starts[i] : ends[i]] for i in selected.tolist()])

    payloads = SlicedPayloads(data, payload_starts, ends)
    return FastBatch(report_ids, payloads, groups, encode)


def _split(
    data: bytes, max_batch: int
) -> (
    tuple[
        NDArray[np.intp],
        NDArray[np.intp],
        list[tuple[NDArray[np.intp], NDArray[np.uint8]]],
        Columns,
    ]
    | None
):
    """Frame starts and sizes, the frames grouped by size, and every frame's columns.

    The groups are (request indices, byte matrix) pairs.
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    begin = _frame_starts(buffer, max_batch)
    if begin is None:
        return None
    sizes = np.diff(np.append(begin, len(data)))
    widest = int(sizes.max())
    padded = np.concatenate([buffer, np.zeros(widest, dtype=np.uint8)])
    windows = np.lib.stride_tricks.as_strided(
        padded, shape=(len(data), widest), strides=(1, 1), writeable=False
    )  # row p: the bytes from p on; a frame is a row's first ``size`` bytes
    classes = []
    for size in np.unique(sizes).tolist():
        rows = np.flatnonzero(sizes == size)
        classes.append((rows, np.ascontiguousarray(windows[begin[rows], :size])))
    return begin, sizes, classes, lambda a, b: windows[begin + a, : b - a]


def _frame_starts(buffer: NDArray[np.uint8], max_batch: int) -> NDArray[np.intp] | None:
    """Where each frame starts, found without a loop over the frames.

    A canonical report starts with its id field (tag 0x0A), so a frame starts with 0x0A,
    its length as a varint, and 0x0A again. Every such position is a candidate, with the
    position its frame would end at. The frames are the chain of candidates from 0 to
    the end of the buffer: usually every candidate with a one-byte length (checked in one
    comparison), else found by :func:`_chain`. Each link follows a frame's own length,
    so a chain that ends exactly at the end of the buffer is the framing protobuf reads.
    """
    size = len(buffer)
    if size < 4 or buffer[0] != REPORTS_TAG:
        return None
    starts = np.flatnonzero((buffer[:-2] == REPORTS_TAG) & (buffer[2:] == REPORTS_TAG))
    lengths = buffer[starts + 1].astype(np.intp)
    one_byte = lengths < 0x80
    starts, ends = starts[one_byte], starts[one_byte] + 2 + lengths[one_byte]
    if len(starts) and ends[-1] == size and (ends[:-1] == starts[1:]).all():
        return starts if starts[0] == 0 and len(starts) <= max_batch else None
    return _chain(buffer, max_batch)


def _chain(buffer: NDArray[np.uint8], max_batch: int) -> NDArray[np.intp] | None:
    """The frame starts when some candidates lie inside frames or lengths take two bytes.

    The chain from 0 is followed by pointer doubling: log2(frames) rounds of gathers.
    Anything else (a frame that does not start with an id, a longer varint, no chain to
    the end) gives None.
    """
    size = len(buffer)
    tags = np.flatnonzero(buffer[: size - 3] == REPORTS_TAG)
    first = buffer[tags + 1].astype(np.intp)
    second = buffer[tags + 2].astype(np.intp)
    third = buffer[tags + 3]
    short = (first < 0x80) & (second == REPORTS_TAG)
    long = (first >= 0x80) & (second < 0x80) & (third == REPORTS_TAG)
    keep = short | long
    starts = tags[keep]
    ends = np.where(short, tags + 2 + first, tags + 3 + (first & 0x7F) + (second << 7))[keep]
    if not len(starts) or starts[0] != 0:
        return None
    target = np.searchsorted(starts, ends)
    linked = np.zeros(len(starts), dtype=bool)
    inside = target < len(starts)
    linked[inside] = starts[target[inside]] == ends[inside]
    last = len(starts)  # the end of the buffer, and where dead links go
    step = np.append(np.where(linked, target, last), last)
    chain = np.zeros(1, dtype=np.intp)
    while chain[-1] != last and len(chain) <= max_batch:
        chain = np.concatenate([chain, step[chain]])
        step = step[step]
    chain = chain[: int(np.searchsorted(chain, last))]
    if len(chain) > max_batch or ends[chain[-1]] != size or not linked[chain[:-1]].all():
        return None
    found: NDArray[np.intp] = starts[chain]
    return found


def same_size_frames(data: bytes) -> bool:
    """Whether ``data`` may be frames of one size (the first frame's size divides it)."""
    if len(data) < 2 or data[0] != REPORTS_TAG:
        return False
    size, _ = _frame_size(data, 0)
    return size > 0 and len(data) % size == 0


def _frame_size(data: bytes, pos: int) -> tuple[int, int]:
    """The whole size of the frame at ``pos`` and its header size, or (0, 0) if malformed."""
    length = shift = 0
    at = pos + 1
    while at < len(data) and shift < 35:
        byte = data[at]
        length |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return at - pos + length, at - pos
        shift += 7
    return 0, 0


def _templates(rows: NDArray[np.intp], frames: NDArray[np.uint8], room: int) -> list[_Part] | None:
    """Split same-size frames into parts that each match one template frame."""
    parts: list[_Part] = []
    while len(rows):
        if len(parts) == room:
            return None
        found = layout_of(frames[0].tobytes())
        if found is None:
            return None
        layout, template = found
        if not parts and _matches(frames[-1], layout) and _all_match(frames, layout):
            return [_Part(layout, template, rows, frames)]
        match = _matching(frames, layout)
        parts.append(_Part(layout, template, rows[match], frames[match]))
        rows, frames = rows[~match], frames[~match]
    return parts


def _matches(frame: NDArray[np.uint8], layout: Layout) -> bool:
    """Whether one frame matches the layout (a mixed class of frames fails at once)."""
    return bytes(np.bitwise_and(frame, layout.mask).data) == bytes(layout.stem.data)


def _matching(frames: NDArray[np.uint8], layout: Layout) -> NDArray[np.bool_]:
    """Which frames match the layout: each masked frame compared with the stem."""
    found: NDArray[np.bool_] = (np.bitwise_and(frames, layout.mask) == layout.stem).all(axis=1)
    return found


def _all_match(frames: NDArray[np.uint8], layout: Layout) -> bool:
    """Whether every frame matches the layout, compared as 8-byte words.

    The mask and stem repeat every ``8 / gcd(size, 8)`` frames, a whole number of words,
    so the frames are compared a period at a time against one period of them (the few
    frames after the last whole period, byte by byte).
    """
    size = frames.shape[1]
    per = 8 // math.gcd(size, 8)
    whole = len(frames) // per * per
    key = (layout.mask.tobytes(), layout.stem.tobytes())
    period = _PERIODS.get(key)
    if period is None:
        period = _PERIODS[key] = (
            np.tile(layout.mask, per).view(np.uint64),
            np.tile(layout.stem, per).view(np.uint64),
        )
        if len(_PERIODS) > _PERIOD_CACHE:
            _PERIODS.popitem(last=False)
    mask, stem = period
    words = frames[:whole].reshape(-1).view(np.uint64).reshape(-1, len(mask))
    masked = np.bitwise_and(words, mask)
    if not (masked == stem).all():
        return False
    rest = frames[whole:]
    return bool(((rest & layout.mask) == layout.stem).all())


def _report_ids(parts: list[_Part], count: int, columns: Columns) -> tuple[ReportIds, bool] | None:
    """The ids by length, if all are in the id alphabet and none repeats; all lowercase hex?

    When every frame has its id at the same place (one id length), the ids are read in
    one pass, in request order; else part by part and merged by length.
    """
    places = {(part.layout.id_start, part.layout.id_end) for part in parts}
    if len(places) == 1:
        ((begin, end),) = places
        pieces = [(np.arange(count), columns(begin, end).tobytes(), end - begin)]
    else:
        pieces = []
        for part in parts:
            layout = part.layout
            text = part.frames[:, layout.id_start : layout.id_end].tobytes()
            pieces.append((part.rows, text, layout.id_end - layout.id_start))
    lower_hex = True
    for _, text, _ in pieces:
        if text.translate(None, _LOWER_HEX):
            lower_hex = False
            if text.translate(None, _ALPHABET):
                return None
    by_length: dict[int, list[tuple[NDArray[np.intp], bytes]]] = {}
    for rows, text, length in pieces:
        by_length.setdefault(length, []).append((rows, text))
    groups = []
    for length, same in by_length.items():
        ids = np.frombuffer(b"".join(text for _, text in same), np.uint8).reshape(-1, length)
        rows = same[0][0]
        if len(same) > 1:
            rows = np.concatenate([piece[0] for piece in same])
            order = np.argsort(rows, kind="stable")
            rows, ids = rows[order], np.ascontiguousarray(ids[order])
        group = IdGroup(rows, ids)
        if repeated_rows(ids, group.fingerprints):
            return None  # the exact path tells identical repeats from conflicting ones
        groups.append(group)
    return ReportIds(count, groups), lower_hex


def _groups(parts: list[_Part], values: list[Any]) -> list[tuple[pb.Report, NDArray[np.intp], Any]]:
    """Parts merged by (survey, question, mechanism, value field), in order of first report."""
    merged: dict[tuple[str, str, bytes, str], list[int]] = {}
    for index, part in enumerate(parts):
        merged.setdefault(part.layout.key, []).append(index)
    groups = []
    for members in merged.values():
        if len(members) == 1:
            part = parts[members[0]]
            groups.append((part.template, part.rows, values[members[0]]))
            continue
        rows = np.concatenate([parts[i].rows for i in members])
        order = np.argsort(rows, kind="stable")
        first = parts[min(members, key=lambda i: int(parts[i].rows[0]))].template
        column = [values[i] for i in members]
        if isinstance(column[0], list):
            flat = [item for piece in column for item in piece]
            joined: Any = [flat[i] for i in order.tolist()]
        else:
            joined = np.concatenate(column)[order]
        groups.append((first, rows[order], joined))
    groups.sort(key=lambda group: int(group[1][0]))
    return groups


def _uniform(
    part: _Part,
    report_ids: ReportIds,
    groups: list[tuple[pb.Report, NDArray[np.intp], Any]],
    bits: NDArray[np.uint8],
    lower_hex: bool,
) -> FastBatch:
    """A batch of one yes/no shape: payloads as a stem and bits, log rows compact."""
    layout, frames = part.layout, part.frames
    ids = report_ids.groups[0].ids
    id_length = ids.shape[1]
    stem = frames[0, layout.id_end : -1].tobytes()

    def encode(selected: NDArray[np.intp]) -> bytes:
        whole = len(selected) == len(frames)
        chosen = ids if whole else np.ascontiguousarray(ids[selected])
        chosen_bits = bits if whole else bits[selected]
        if id_length % 2 == 0 and (lower_hex or not chosen.tobytes().translate(None, _LOWER_HEX)):
            # lowercase hex digits, as clients send: half the bytes
            packed = binascii.a2b_hex(chosen.data)
            return compact_uniform(stem, id_length, packed, chosen_bits.data, hex_packed=True)
        return compact_uniform(stem, id_length, chosen.data, chosen_bits.data)

    return FastBatch(report_ids, UniformPayloads(stem, bits), groups, encode)
