"""Decoding a SubmitReports batch into columns: a vectorized fast path and an exact fallback.

A well-behaved client sends a batch of reports that differ only in ``report_id`` and value,
each encoded canonically. The fast path recognises that shape on the raw bytes: it parses
the first report, requires it to be the canonical encoding of its own fields, and then
checks with numpy that every other record repeats it byte for byte outside the id and the
value. Bytes that pass describe exactly those reports, with no ambiguity, so nothing is
decoded per report in Python. Anything else (other field orders, unknown fields, mixed
questions, ids of different lengths, repeats, errors) takes the exact path, which parses
with protobuf and validates report by report, naming the first bad report and field.
Both paths return the same :class:`DecodedBatch`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from numpy.typing import NDArray

from deniable.aggregator.storage._ids import KEY, IdGroup, ReportIds, UniformPayloads, kernels
from deniable.aggregator.storage._log_format import (
    COMPACT,
    compact_columns,
    compact_uniform,
    varint,
)
from deniable.shared.errors import InvalidArgument, ResourceExhausted
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["DecodedBatch", "Group", "decode_batch", "frame"]

REPORT_ID_PATTERN = "[A-Za-z0-9_.-]{1,128}"
_REPORT_ID = re.compile(REPORT_ID_PATTERN)
_ID_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_ID_ALLOWED = np.zeros(256, dtype=np.bool_)
_ID_ALLOWED[np.frombuffer(_ID_BYTES, dtype=np.uint8)] = True
_REPORTS_TAG = 0x0A  # SubmitReportsRequest.reports: field 1, length-delimited
_BIT_TAG = 0x28  # Report.bit: field 5, varint


@dataclass(frozen=True)
class Group:
    """Reports of a batch that share survey, question, mechanism and kind of value.

    Attributes:
        template: the group's first report; its survey, question and mechanism are the
            group's.
        first: the request index of that report, for error messages.
        rows: the group's positions among the distinct reports, ascending.
        values: the reports' values, aligned with ``rows``: uint8 0/1 for ``bit``, int64
            for ``option``, a list of bytes for ``bits``, and a (m, 3) uint64 array of
            (a, b, value) for ``hashed``.
    """

    template: pb.Report
    first: int
    rows: NDArray[np.intp]
    values: NDArray[Any]


@dataclass(frozen=True)
class DecodedBatch:
    """A structurally valid batch, each distinct report once.

    Attributes:
        size: reports in the request, identical repeats included.
        report_ids: distinct report ids (ASCII), in request order, in columns.
        payloads: each report's canonical encoding without its id.
        groups: the reports grouped by (survey, question, mechanism, kind of value).
        encode: the log row of the reports at ``rows`` (see :mod:`aggregator._log_format`):
            compact for a fast-path batch, a canonical ``SubmitReportsRequest`` otherwise.
        positions: each distinct report's index in the request.
        enrollment_token: the request's ``enrollment_token`` ("" when absent). It is never
            part of the log encoding.
    """

    size: int
    report_ids: ReportIds
    payloads: Sequence[bytes]
    groups: list[Group]
    encode: Callable[[NDArray[np.intp]], bytes]
    positions: Sequence[int]
    enrollment_token: str = ""


def _read_varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """The varint at ``pos`` and the position after it, or None if malformed."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return None


def frame(report: bytes) -> bytes:
    """One report's bytes as a ``reports`` entry of a ``SubmitReportsRequest``."""
    return bytes([_REPORTS_TAG]) + varint(len(report)) + report


def _id_field_size(report_id: str) -> int:
    return 1 + len(varint(len(report_id))) + len(report_id)


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
    if report.WhichOneof("value") is None:
        raise InvalidArgument(f"{where}.value: missing (bit, option, bits, hashed or number)")


def _check_size(count: int, max_batch: int) -> None:
    if count == 0:
        raise InvalidArgument("reports: a batch needs at least one report")
    if count > max_batch:
        raise ResourceExhausted(f"reports: batch of {count} exceeds the limit of {max_batch}")


def decode_batch(data: bytes, max_batch: int) -> DecodedBatch:
    """Decode and structurally validate a serialized ``SubmitReportsRequest``.

    Raises:
        InvalidArgument: unparsable bytes, an empty batch, a malformed report, or an id
            repeated with different content (naming the report index and field).
        ResourceExhausted: more than ``max_batch`` reports.
    """
    fast = _decode_uniform(data, max_batch)
    return fast if fast is not None else _decode_exact(data, max_batch)


def _decode_uniform(data: bytes, max_batch: int) -> DecodedBatch | None:
    """The fast path: canonical records identical outside id and bit, or None.

    Only a request made of ``reports`` entries alone qualifies: any other field (such as
    ``enrollment_token``) starts a row with another tag byte, and ``scan_uniform`` compares
    every row's bytes before the id, tag included, with the first report's.
    """
    if len(data) < 2 or data[0] != _REPORTS_TAG:
        return None
    header = _read_varint(data, 1)
    if header is None:
        return None
    length, start = header
    size = start + length
    if size > len(data) or len(data) % size:
        return None
    count = len(data) // size
    if count > max_batch:
        return None
    head = data[start:size]
    template = pb.Report()
    try:
        template.ParseFromString(head)
    except DecodeError:
        return None
    template.DiscardUnknownFields()
    if template.WhichOneof("value") != "bit" or head[-2] != _BIT_TAG:
        return None
    try:
        check_structure(template, 0)
    except InvalidArgument:
        return None
    if template.SerializeToString(deterministic=True) != head:
        return None  # unknown fields, or not canonical: its layout is not certain
    id_end = start + _id_field_size(template.report_id)
    id_start = id_end - len(template.report_id)
    rows = np.frombuffer(data, dtype=np.uint8).reshape(count, size)
    ok, id_columns, prints = kernels().scan_uniform(rows, id_start, id_end, _ID_ALLOWED, KEY)
    if not ok:  # another layout, a byte outside the id alphabet, a bit other than 0/1, or
        return None  # maybe repeated ids: the exact path tells identical from conflicting
    id_length = id_end - id_start
    ids = ReportIds(count, [IdGroup(np.arange(count), id_columns, prints)])
    bits = rows[:, -1].copy()  # not a view: the request's bytes are not kept
    stem = bytes(rows[0, id_end:-1])
    payloads = UniformPayloads(stem, bits)
    everything = np.arange(count)

    def encode(selected: NDArray[np.intp]) -> bytes:
        whole = len(selected) == count
        chosen = id_columns if whole else id_columns[selected]
        chosen_bits = (bits if whole else bits[selected]).tobytes()
        if id_length % 2 == 0:
            hex_ids, packed = kernels().pack_hex(chosen)
            if hex_ids:  # lowercase hex digits, as clients send: half the bytes
                return compact_uniform(
                    stem, id_length, packed.tobytes(), chosen_bits, hex_packed=True
                )
        return compact_uniform(stem, id_length, chosen.tobytes(), chosen_bits)

    group = Group(template=template, first=0, rows=everything, values=bits)
    return DecodedBatch(count, ids, payloads, [group], encode, range(count))


def _decode_exact(data: bytes, max_batch: int) -> DecodedBatch:
    """The exact path: protobuf parsing and per-report validation with precise errors."""
    request = pb.SubmitReportsRequest()
    try:
        request.ParseFromString(data)
    except DecodeError:
        raise InvalidArgument("request: not a valid SubmitReportsRequest message") from None
    request.DiscardUnknownFields()
    reports = request.reports
    _check_size(len(reports), max_batch)
    for index, report in enumerate(reports):
        check_structure(report, index)
    ids: list[bytes] = []
    payloads: list[bytes] = []
    records: list[bytes] = []
    positions: list[int] = []
    seen_at: dict[bytes, tuple[int, int]] = {}  # report id -> (row, request index)
    groups: dict[tuple[str, str, bytes, str], tuple[int, list[int], list[Any]]] = {}
    for index, report in enumerate(reports):
        report_id = report.report_id.encode("ascii")
        encoded = report.SerializeToString(deterministic=True)
        payload = encoded[_id_field_size(report.report_id) :]
        seen = seen_at.get(report_id)
        if seen is not None:
            if payloads[seen[0]] != payload:
                raise InvalidArgument(
                    f"reports[{index}].report_id: {report.report_id!r} repeats "
                    f"reports[{seen[1]}] with different content"
                )
            continue  # an identical repeat inside the batch: counted once
        row = len(ids)
        seen_at[report_id] = (row, index)
        positions.append(index)
        ids.append(report_id)
        payloads.append(payload)
        records.append(frame(encoded))
        kind = report.WhichOneof("value")
        assert kind is not None
        key = (
            report.survey_id,
            report.question_id,
            report.mechanism.SerializeToString(deterministic=True),
            kind,
        )
        entry = groups.setdefault(key, (index, [], []))
        entry[1].append(row)
        entry[2].append(_value(report, kind))
    decoded_groups = [
        Group(
            template=reports[first],
            first=first,
            rows=np.asarray(rows, dtype=np.intp),
            values=_values(reports[first].WhichOneof("value"), values),
        )
        for first, rows, values in groups.values()
    ]

    def encode(selected: NDArray[np.intp]) -> bytes:
        return b"".join(records[i] for i in selected.tolist())

    return DecodedBatch(
        len(reports),
        ReportIds.of(ids),
        payloads,
        decoded_groups,
        encode,
        positions,
        request.enrollment_token,
    )


def _value(report: pb.Report, kind: str) -> Any:
    if kind == "hashed":
        return (report.hashed.a, report.hashed.b, report.hashed.value)
    return getattr(report, kind)


def _values(kind: str | None, values: list[Any]) -> Any:
    """A group's values in the column form :class:`Group` documents."""
    if kind == "bit":
        return np.asarray(values, dtype=np.uint8)
    if kind == "option":
        return np.asarray(values, dtype=np.int64)
    if kind == "hashed":
        return np.asarray(values, dtype=np.uint64).reshape(-1, 3)
    return values


def decode_log(data: bytes) -> tuple[ReportIds, Sequence[bytes]]:
    """The report ids and payloads held by one log row (a stored batch), in either encoding.

    Raises:
        LogFormatError: a damaged compact row.
        InvalidArgument: a damaged canonical row.
    """
    if data and data[0] in COMPACT:
        stem, ids, bits = compact_columns(data)
        return ReportIds.uniform(ids), UniformPayloads(stem, bits.copy())
    batch = decode_batch(data, max_batch=len(data))
    return batch.report_ids, batch.payloads
