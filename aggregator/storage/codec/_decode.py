"""Decoding a SubmitReports batch into columns: a vectorized fast path and an exact fallback.

A well-behaved client sends canonically encoded reports, and the reports of one question
differ only in ``report_id`` and value. The fast path (:mod:`._decode_fast`) recognises
that shape on the raw bytes, whatever the mix of questions and kinds of value, and reads
ids and values column-wise with numpy, so nothing is decoded per report in Python. Bytes
that pass describe exactly those reports, with no ambiguity. Anything else (other field
orders, unknown fields, an enrollment token, repeated ids, errors) takes the exact path,
which parses with protobuf and validates report by report, naming the first bad report
and field. Both paths return the same :class:`DecodedBatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from numpy.typing import NDArray

from deniable.aggregator.storage.codec._decode_fast import decode_fast, same_size_frames
from deniable.aggregator.storage.codec._ids import ReportIds, UniformPayloads
from deniable.aggregator.storage.codec._layout import check_structure
from deniable.aggregator.storage.codec._log_format import COMPACT, compact_columns, expand, varint
from deniable.shared.errors import InvalidArgument, ResourceExhausted
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "DecodedBatch",
    "Group",
    "check_structure",
    "decode_batch",
    "decode_exact",
    "decode_log",
    "decode_row",
    "decode_vectorized",
    "frame",
]

_REPORTS_TAG = 0x0A  # SubmitReportsRequest.reports: field 1, length-delimited
# A request this small whose reports differ in size (a participant's call: a report per
# question) is decoded report by report: the fast path's dozens of numpy calls cost more
# than its columns save here. Same-size reports (one question's) still take the fast path,
# which also stores a yes/no batch compactly.
SMALL_BYTES = 2048


@dataclass(frozen=True)
class Group:
    """Reports of a batch that share survey, question, mechanism and kind of value.

    Attributes:
        template: the group's first report; its survey, question and mechanism are the
            group's.
        first: the request index of that report, for error messages.
        rows: the group's positions among the distinct reports, ascending.
        values: the reports' values, aligned with ``rows``, by value field: ``bit``, a
            uint8 array of 0/1; ``option`` and ``option_fixed``, an int64 array; ``bits``,
            a list of bytes; ``hashed``, an (m, 3) uint64 array of (a, b, value or
            value_fixed); ``number``, a float64 array; ``encoded``, a list of bytes.
    """

    template: pb.Report
    first: int
    rows: NDArray[np.intp]
    values: Any


@dataclass(frozen=True)
class DecodedBatch:
    """A structurally valid batch, each distinct report once.

    Attributes:
        size: reports in the request, identical repeats included.
        report_ids: distinct report ids (ASCII), in request order, in columns.
        payloads: each report's canonical encoding without its id.
        groups: the reports grouped by (survey, question, mechanism, kind of value), in
            the order of their first report.
        encode: the log row of the reports at ``rows`` (see :mod:`._log_format`):
            compact for a batch of one yes/no shape, else a canonical
            ``SubmitReportsRequest``.
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


def frame(report: bytes) -> bytes:
    """One report's bytes as a ``reports`` entry of a ``SubmitReportsRequest``."""
    return bytes([_REPORTS_TAG]) + varint(len(report)) + report


def _id_field_size(report_id: str) -> int:
    return 1 + len(varint(len(report_id))) + len(report_id)


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
    if len(data) <= SMALL_BYTES and not same_size_frames(data):
        return decode_exact(data, max_batch)
    fast = decode_vectorized(data, max_batch)
    return fast if fast is not None else decode_exact(data, max_batch)


def decode_vectorized(data: bytes, max_batch: int) -> DecodedBatch | None:
    """The fast path (:mod:`._decode_fast`), or None when the exact path must decide."""
    fast = decode_fast(data, max_batch)
    if fast is None:
        return None
    groups = [Group(template, int(rows[0]), rows, values) for template, rows, values in fast.groups]
    count = len(fast.report_ids)
    return DecodedBatch(count, fast.report_ids, fast.payloads, groups, fast.encode, range(count))


def decode_exact(data: bytes, max_batch: int) -> DecodedBatch:
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
            values=_values(key[3], values),
        )
        for key, (first, rows, values) in groups.items()
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
        hashed = report.hashed
        value = hashed.value_fixed if hashed.HasField("value_fixed") else hashed.value
        return (hashed.a, hashed.b, value)
    return getattr(report, kind)


def _values(kind: str, values: list[Any]) -> Any:
    """A group's values in the column form :class:`Group` documents."""
    if kind == "bit":
        return np.asarray(values, dtype=np.uint8)
    if kind in ("option", "option_fixed"):
        return np.asarray(values, dtype=np.int64)
    if kind == "hashed":
        return np.asarray(values, dtype=np.uint64).reshape(-1, 3)
    if kind == "number":
        return np.asarray(values, dtype=np.float64)
    return values  # bits, encoded: bytes each


def decode_log(data: bytes) -> tuple[ReportIds, Sequence[bytes]]:
    """The report ids and payloads held by one log row (a stored batch), in either encoding.

    Raises:
        LogFormatError: a damaged compact row.
        InvalidArgument: a damaged canonical row.
    """
    if data and data[0] in COMPACT:
        stem, ids, bits = compact_columns(data)
        return ReportIds.uniform(np.ascontiguousarray(ids)), UniformPayloads(stem, bits.copy())
    batch = decode_batch(data, max_batch=len(data))
    return batch.report_ids, batch.payloads


def decode_row(row: bytes) -> DecodedBatch:
    """A log row (a stored batch, in either encoding) decoded as a received batch is.

    Raises:
        LogFormatError: a damaged compact row.
        InvalidArgument: a damaged canonical row.
    """
    data = expand(row)
    return decode_batch(data, max_batch=max(1, len(data)))
