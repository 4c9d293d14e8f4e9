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

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.storage._ids import (
    IdGroup,
    ReportIds,
    SlicedPayloads,
    UniformPayloads,
    repeated_rows,
)
from deniable.aggregator.storage._layout import REPORTS_TAG, Layout, layout_of, read_values
from deniable.aggregator.storage._log_format import compact_uniform
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_TEMPLATES", "FastBatch", "decode_fast"]

MAX_TEMPLATES = 64  # report shapes per batch (question, mechanism, id length, value size)
_LOWER_HEX = b"0123456789abcdef"
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_TILES: OrderedDict[tuple[bytes, bytes, int], tuple[Any, ...]] = OrderedDict()
_TILE_CACHE = 16


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
            return _finish(data, rows * size, parts)
    split = _split(data, max_batch)
    if split is None:
        return None
    starts, classes = split
    parts = []
    for rows, frames in classes:
        found = _templates(rows, frames, MAX_TEMPLATES - len(parts))
        if found is None:
            return None
        parts.extend(found)
    return _finish(data, starts, parts)


def _finish(data: bytes, starts: NDArray[np.intp], parts: list[_Part]) -> FastBatch | None:
    """Check the ids and values of the matched frames, and assemble the batch."""
    values = [read_values(part.frames, part.layout) for part in parts]
    if any(value is None for value in values):
        return None
    checked = _report_ids(parts, len(starts))
    if checked is None:
        return None
    report_ids, lower_hex = checked
    groups = _groups(parts, values)
    if len(parts) == 1 and parts[0].layout.kind == "bit":
        bits = cast(NDArray[np.uint8], values[0])
        return _uniform(parts[0], report_ids, groups, bits, lower_hex)
    ends = np.empty(len(starts), dtype=np.intp)
    payload_starts = np.empty(len(starts), dtype=np.intp)
    for part in parts:
        size = part.frames.shape[1]
        ends[part.rows] = starts[part.rows] + size
        payload_starts[part.rows] = starts[part.rows] + part.layout.id_end

    def encode(selected: NDArray[np.intp]) -> bytes:
        if len(selected) == len(starts):
            return data  # canonical frames, and nothing else
        return b"".join([data[starts[i] : ends[i]] for i in selected.tolist()])

    payloads = SlicedPayloads(data, payload_starts, ends)
    return FastBatch(report_ids, payloads, groups, encode)


def _split(
    data: bytes, max_batch: int
) -> tuple[NDArray[np.intp], list[tuple[NDArray[np.intp], NDArray[np.uint8]]]] | None:
    """Frame starts, and the frames grouped by size as (request indices, byte matrix)."""
    starts: list[int] = []
    pos = 0
    while pos < len(data):
        if data[pos] != REPORTS_TAG or len(starts) == max_batch:
            return None
        size, _ = _frame_size(data, pos)
        if not size:
            return None
        starts.append(pos)
        pos += size
    if pos != len(data):
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)
    begin = np.asarray(starts, dtype=np.intp)
    sizes = np.diff(np.append(begin, len(data)))
    classes = []
    for size in np.unique(sizes).tolist():
        rows = np.flatnonzero(sizes == size)
        frames = buffer[begin[rows][:, None] + np.arange(size)]
        classes.append((rows, frames))
    return begin, classes


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
        if not parts and _all_match(frames, layout):
            return [_Part(layout, template, rows, frames)]
        match = ((frames & layout.mask) == layout.stem).all(axis=1)
        parts.append(_Part(layout, template, rows[match], frames[match]))
        rows, frames = rows[~match], frames[~match]
    return parts


def _all_match(frames: NDArray[np.uint8], layout: Layout) -> bool:
    """Whether every frame matches the layout: one masked comparison over 8-byte words."""
    flat = frames.reshape(-1)
    whole = len(flat) // 8 * 8
    key = (layout.mask.tobytes(), layout.stem.tobytes(), len(frames))
    tiles = _TILES.get(key)
    if tiles is None:
        mask, stem = np.tile(layout.mask, len(frames)), np.tile(layout.stem, len(frames))
        tiles = (mask[:whole].view(np.uint64), stem[:whole].tobytes(), mask[whole:], stem[whole:])
        _TILES[key] = tiles
        if len(_TILES) > _TILE_CACHE:
            _TILES.popitem(last=False)
    mask_words, stem_words, mask_tail, stem_tail = tiles
    masked = np.bitwise_and(flat[:whole].view(np.uint64), mask_words)
    return masked.tobytes() == stem_words and np.array_equal(flat[whole:] & mask_tail, stem_tail)


def _report_ids(parts: list[_Part], count: int) -> tuple[ReportIds, bool] | None:
    """The ids by length, if all are in the id alphabet and none repeats; all lowercase hex?"""
    by_length: dict[int, list[tuple[NDArray[np.intp], bytes]]] = {}
    lower_hex = True
    for part in parts:
        text = part.frames[:, part.layout.id_start : part.layout.id_end].tobytes()
        if text.translate(None, _LOWER_HEX):
            lower_hex = False
            if text.translate(None, _ALPHABET):
                return None
        length = part.layout.id_end - part.layout.id_start
        by_length.setdefault(length, []).append((part.rows, text))
    groups = []
    for length, pieces in by_length.items():
        joined = b"".join(piece[1] for piece in pieces)
        ids = np.frombuffer(joined, dtype=np.uint8).reshape(-1, length)
        rows = pieces[0][0]
        if len(pieces) > 1:
            rows = np.concatenate([piece[0] for piece in pieces])
            order = np.argsort(rows, kind="stable")
            rows, ids = rows[order], np.ascontiguousarray(ids[order])
        if repeated_rows(ids):
            return None  # the exact path tells identical repeats from conflicting ones
        groups.append(IdGroup(rows, ids))
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
        chosen = ids if whole else ids[selected]
        chosen_bits = (bits if whole else bits[selected]).tobytes()
        text = chosen.tobytes()
        if id_length % 2 == 0 and (lower_hex or not text.translate(None, _LOWER_HEX)):
            # lowercase hex digits, as clients send: half the bytes
            packed = bytes.fromhex(text.decode("ascii"))
            return compact_uniform(stem, id_length, packed, chosen_bits, hex_packed=True)
        return compact_uniform(stem, id_length, text, chosen_bits)

    return FastBatch(report_ids, UniformPayloads(stem, bits), groups, encode)
