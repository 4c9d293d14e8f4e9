"""The client side of bench/burst_memory.py: processes that fire big SubmitReports at once.

Each process builds its requests (valid OUE reports with fresh ids, serialized by hand in
canonical field order) before it says it is ready, waits for the common start, then sends
all of its calls at once, each on a channel of its own by default (as many participants
would), and returns every call's outcome.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event

import grpc

from deniable.shared.wire.v1 import aggregator_pb2 as pb

SUBMIT = "/deniable.v1.Aggregator/SubmitReports"


@dataclass(frozen=True)
class Plan:
    """What one client process sends: ``calls`` requests of ``reports`` reports each."""

    address: str
    survey_id: str
    question_id: str
    mechanism: bytes  # the question's serialized pb.Mechanism
    options: int
    process: int
    calls: int
    reports: int
    id_length: int
    per_channel: int
    timeout: float


@dataclass(frozen=True)
class Outcome:
    """One call's end: its status code's name, its details, and what it stored."""

    code: str
    details: str
    stored: int
    request_bytes: int


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) of field number ``tag``."""
    return _varint(tag << 3 | 2) + _varint(len(payload)) + payload


def build_request(plan: Plan, call: int) -> bytes:
    """One SubmitReportsRequest of ``plan.reports`` OUE reports with random bits."""
    middle = (
        _field(2, plan.survey_id.encode())
        + _field(3, plan.question_id.encode())
        + _field(4, plan.mechanism)
    )
    width = (plan.options + 7) // 8
    mask = (1 << (plan.options - 8 * (width - 1))) - 1  # padding bits of the last byte stay 0
    randomness = os.urandom(width * plan.reports)
    parts = []
    for i in range(plan.reports):
        report_id = f"p{plan.process:03d}c{call:04d}r{i:06d}".rjust(plan.id_length, "0")
        bits = bytearray(randomness[i * width : (i + 1) * width])
        bits[-1] &= mask
        report = _field(1, report_id.encode()) + middle + _field(7, bytes(bits))
        parts.append(_field(1, report))
    return b"".join(parts)


def _check(plan: Plan, data: bytes) -> None:
    """The hand-built bytes parse as the reports meant (a guard on the encoder above)."""
    request = pb.SubmitReportsRequest.FromString(data)
    first = request.reports[0]
    assert len(request.reports) == plan.reports
    assert (first.survey_id, first.question_id) == (plan.survey_id, plan.question_id)
    assert first.mechanism.SerializeToString() == plan.mechanism
    assert (len(first.report_id), len(first.bits)) == (plan.id_length, (plan.options + 7) // 8)
    assert request.SerializeToString() == data  # canonical: as the daemon's fast path reads it


def _outcome(future: grpc.Future[pb.SubmitReportsResponse], size: int) -> Outcome:
    try:
        response: pb.SubmitReportsResponse = future.result()
    except grpc.RpcError as error:
        call: grpc.Call = error  # type: ignore[assignment]
        return Outcome(call.code().name, call.details() or "", 0, size)
    return Outcome("OK", "", response.stored, size)


def run(plan: Plan, ready: Queue[int], start: Event, results: Queue[list[Outcome]]) -> None:
    """Build, say ready, wait for ``start``, fire every call at once, put the outcomes."""
    requests = [build_request(plan, call) for call in range(plan.calls)]
    _check(plan, requests[0])
    channels = [  # each a connection of its own: channels of a process share one otherwise
        grpc.insecure_channel(plan.address, options=[("grpc.use_local_subchannel_pool", 1)])
        for _ in range((plan.calls + plan.per_channel - 1) // plan.per_channel)
    ]
    ready.put(plan.process)
    if not start.wait(plan.timeout):
        results.put([Outcome("NOT_STARTED", "", 0, len(r)) for r in requests])
        return
    futures = []
    started = time.monotonic()
    for call, data in enumerate(requests):
        method: grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
        method = channels[call // plan.per_channel].unary_unary(
            SUBMIT, request_serializer=None,
            response_deserializer=pb.SubmitReportsResponse.FromString,
        )  # fmt: skip
        left = max(0.1, plan.timeout - (time.monotonic() - started))
        futures.append(method.future(data, timeout=left))
    outcomes = [_outcome(future, len(data)) for future, data in zip(futures, requests, strict=True)]
    for channel in channels:
        channel.close()
    results.put(outcomes)
