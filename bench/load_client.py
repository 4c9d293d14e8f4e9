"""Load-test client processes: threads with a channel each send mixed calls, then a resend.

Run by ``bench/load_test.py``. Each client process opens ``threads`` channels (one per
thread) and, on the parent's signal, every thread sends calls one after the other until
the time or its call cap runs out: with probability ``estimates`` a ``GetEstimate``, else a
``SubmitReports`` of fresh yes/no reports. Each batch is generated from the process's
secret entropy and (thread, call), so the process keeps only a key and a digest per
acknowledged batch and can rebuild it byte for byte. After every process has stopped,
the parent names how many acknowledged batches each process resends; the process draws
them uniformly from its own, rebuilds them, checks the digests (unchanged) and resends
them on its threads' channels.

Batch sizes: ``fixed`` (always ``batch``) or ``mixed``: log-uniform on 1..``batch``,
``floor(exp(U * ln(batch + 1)))`` with U uniform on [0, 1), so size k has probability
``ln(1 + 1/k) / ln(batch + 1)``. With 2,000: median 44, mean 262, a quarter of the calls
at most 6 reports and 9 % at least 1,000 (small calls dominate, like participants); the
reports are spread evenly over sizes, half of them in calls of 1,000 or more.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import grpc
import numpy as np
from numpy.typing import NDArray

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

SUBMIT_METHOD = "/deniable.v1.Aggregator/SubmitReports"
CALL_TIMEOUT = 60.0  # seconds per call: a hang guard
STARTUP_TIMEOUT = 60.0
PARENT_TIMEOUT = 600.0  # the longest a client process waits for the parent's next word
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
]
QUESTION = pb.Question(
    id="q",
    text="Load?",
    binary=pb.BinaryQuestion(),
    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
)
ID_LENGTH = {"random": 32, "structured": 28}
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


@dataclass(frozen=True)
class Workload:
    """What every client thread sends, and for how long."""

    target: str
    survey_id: str
    threads: int  # per process, each with its own channel
    sizes: str  # "fixed" or "mixed"
    batch: int  # the fixed size, or the largest mixed one
    estimates: float  # fraction of calls that are GetEstimate
    ids: str  # "random" (32 hex digits, like participants) or "structured"
    seconds: float
    max_requests: int  # calls per thread at most


@dataclass
class ThreadLoad:
    """What one thread (or, merged, one process) did during the load."""

    submits: int = 0
    estimates: int = 0
    estimates_empty: int = 0  # FAILED_PRECONDITION "no reports yet" (before the first commit)
    reports_acked: int = 0  # reports in SubmitReports calls answered OK
    stored: int = 0  # sum of SubmitReportsResponse.stored
    already_stored: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    submit_latencies: list[float] = field(default_factory=list)
    estimate_latencies: list[float] = field(default_factory=list)
    acked: list[tuple[int, int, int, bytes]] = field(
        default_factory=list
    )  # thread, call, size, digest
    ended: float = 0.0  # time.time() of the last call's end

    def merge(self, other: ThreadLoad) -> None:
        """Add another thread's figures to these."""
        self.submits += other.submits
        self.estimates += other.estimates
        self.estimates_empty += other.estimates_empty
        self.reports_acked += other.reports_acked
        self.stored += other.stored
        self.already_stored += other.already_stored
        self.errors.update(other.errors)
        self.submit_latencies += other.submit_latencies
        self.estimate_latencies += other.estimate_latencies
        self.acked += other.acked
        self.ended = max(self.ended, other.ended)


@dataclass
class Resent:
    """What the resend of acknowledged batches got back."""

    batches: int = 0
    reports: int = 0
    stored: int = 0  # must stay 0: every id was acknowledged before
    already_stored: int = 0
    batches_stored_again: int = 0  # batches with stored > 0
    changed: int = 0  # rebuilt batches whose digest differed (not sent): a harness bug
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0  # the whole resend, set by the parent

    def merge(self, other: Resent) -> None:
        """Add another thread's figures to these."""
        for name in ("batches", "reports", "stored", "already_stored"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.batches_stored_again += other.batches_stored_again
        self.changed += other.changed
        self.errors.update(other.errors)
        self.latencies += other.latencies


def draw_size(rng: np.random.Generator, workload: Workload) -> int:
    """One call's batch size: ``batch``, or log-uniform on 1..``batch`` (module docstring)."""
    if workload.sizes == "fixed":
        return workload.batch
    return min(workload.batch, int(np.exp(rng.uniform(0.0, np.log(workload.batch + 1)))))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class BatchBuilder:
    """Serializes a SubmitReportsRequest of yes/no reports from arrays, without messages.

    Every report of a batch has the same encoding but for its id and its bit, so the
    body is a template repeated n times with those two patched in: the clients then
    spend little of the shared CPU. :meth:`verify` compares it with protobuf's own.
    """

    def __init__(self, survey_id: str, id_length: int) -> None:
        tail = pb.Report(
            survey_id=survey_id, question_id=QUESTION.id, mechanism=QUESTION.mechanism
        ).SerializeToString()
        id_field = b"\x0a" + _varint(id_length)
        report_length = len(id_field) + id_length + len(tail) + 2  # + bit's tag and value
        head = b"\x0a" + _varint(report_length) + id_field
        record = head + bytes(id_length) + tail + b"\x28\x00"
        self.survey_id = survey_id
        self.id_length = id_length
        self._record = np.frombuffer(record, dtype=np.uint8)
        self._id_at = len(head)
        self._bit_at = len(record) - 1

    def body(self, ids: NDArray[np.uint8], bits: NDArray[np.uint8]) -> bytes:
        """The serialized request: ``ids`` (n × id_length ASCII bytes), ``bits`` (n of 0/1)."""
        records = np.tile(self._record, (len(bits), 1))
        records[:, self._id_at : self._id_at + self.id_length] = ids
        records[:, self._bit_at] = bits
        return records.tobytes()

    def verify(self) -> None:
        """Raise RuntimeError unless :meth:`body` equals protobuf's serialization."""
        ids = np.frombuffer(b"".join(bytes([65 + i]) * self.id_length for i in range(3)), np.uint8)
        bits = np.array([1, 0, 1], dtype=np.uint8)
        reports = [
            pb.Report(
                report_id=chr(65 + i) * self.id_length,
                survey_id=self.survey_id,
                question_id=QUESTION.id,
                mechanism=QUESTION.mechanism,
                bit=bool(bits[i]),
            )
            for i in range(3)
        ]
        expected = pb.SubmitReportsRequest(reports=reports).SerializeToString()
        if self.body(ids.reshape(3, self.id_length), bits) != expected:
            raise RuntimeError("BatchBuilder's body differs from protobuf's serialization")


def make_body(
    builder: BatchBuilder, workload: Workload, entropy: int, key: tuple[int, int, int, int]
) -> bytes:
    """Batch ``key`` = (process, thread, call, size) of a process, the same bytes each time."""
    process, thread, call, size = key
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(thread, call)))
    if workload.ids == "random":
        raw = np.frombuffer(rng.bytes(16 * size), dtype=np.uint8).reshape(size, 16)
        ids = np.empty((size, 32), dtype=np.uint8)
        ids[:, 0::2] = _HEX[raw >> 4]
        ids[:, 1::2] = _HEX[raw & 15]
    else:  # process.thread.call.row, behind 8 hex digits of the process's entropy
        prefix = f"{entropy & 0xFFFFFFFF:08x}.{process:03d}.{thread:02d}.{call:06d}."
        text = "".join(f"{prefix}{row:05d}" for row in range(size)).encode()
        ids = np.frombuffer(text, dtype=np.uint8).reshape(size, ID_LENGTH["structured"])
    bits = rng.integers(0, 2, size, dtype=np.uint8)
    return builder.body(ids, bits)


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=16).digest()


class _Process:
    """One client process's state: its workload, channels, entropy and batch builder."""

    def __init__(self, workload: Workload, index: int) -> None:
        self.workload = workload
        self.index = index
        self.entropy = secrets.randbits(128)
        self.builder = BatchBuilder(workload.survey_id, ID_LENGTH[workload.ids])
        self.builder.verify()
        self.channels = [
            grpc.insecure_channel(workload.target, options=CHANNEL_OPTIONS)
            for _ in range(workload.threads)
        ]

    def body(self, thread: int, call: int, size: int) -> bytes:
        return make_body(
            self.builder, self.workload, self.entropy, (self.index, thread, call, size)
        )

    def submit(self, thread: int) -> grpc.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]:
        return self.channels[thread].unary_unary(
            SUBMIT_METHOD, response_deserializer=pb.SubmitReportsResponse.FromString
        )

    def load(self, thread: int, stop_at: float, out: ThreadLoad) -> None:
        """One thread's calls until ``stop_at`` (time.monotonic) or the call cap."""
        workload = self.workload
        submit = self.submit(thread)
        stub = pb_grpc.AggregatorStub(self.channels[thread])
        question = pb.GetEstimateRequest(survey_id=workload.survey_id, question_id=QUESTION.id)
        rng = np.random.default_rng(np.random.SeedSequence(self.entropy, spawn_key=(thread,)))
        for call in range(workload.max_requests):
            if time.monotonic() >= stop_at:
                break
            if rng.random() < workload.estimates:
                began = time.perf_counter()
                try:
                    stub.GetEstimate(question, timeout=CALL_TIMEOUT)
                except grpc.RpcError as error:
                    if error.code() == grpc.StatusCode.FAILED_PRECONDITION and "no reports yet" in (
                        error.details() or ""
                    ):
                        out.estimates_empty += 1  # before the first commit: the answer
                    else:
                        out.errors[f"GetEstimate {error.code().name}"] += 1
                out.estimate_latencies.append(time.perf_counter() - began)
                out.estimates += 1
                continue
            size = draw_size(rng, workload)
            body = self.body(thread, call, size)
            began = time.perf_counter()
            try:
                response = submit(body, timeout=CALL_TIMEOUT)
            except grpc.RpcError as error:
                out.errors[f"SubmitReports {error.code().name}"] += 1
            else:
                out.reports_acked += size
                out.stored += response.stored
                out.already_stored += response.already_stored
                out.acked.append((thread, call, size, _digest(body)))
            out.submit_latencies.append(time.perf_counter() - began)
            out.submits += 1
        out.ended = time.time()

    def resend(self, thread: int, picks: list[tuple[int, int, int, bytes]], out: Resent) -> None:
        """Rebuild acknowledged batches, check they are unchanged, and send them again."""
        submit = self.submit(thread)
        for origin, call, size, digest in picks:
            body = self.body(origin, call, size)
            if _digest(body) != digest:
                out.changed += 1
                continue
            began = time.perf_counter()
            try:
                response = submit(body, timeout=CALL_TIMEOUT)
            except grpc.RpcError as error:
                out.errors[f"SubmitReports {error.code().name}"] += 1
                continue
            finally:
                out.latencies.append(time.perf_counter() - began)
            out.batches += 1
            out.reports += size
            out.stored += response.stored
            out.already_stored += response.already_stored
            out.batches_stored_again += response.stored > 0

    def in_threads(self, target: Any, work: list[tuple[Any, ...]], limit: float) -> None:
        """Run ``target(thread, *work[thread])`` in one thread per channel; bounded wait."""
        threads = [
            threading.Thread(target=target, args=(i, *args), daemon=True)
            for i, args in enumerate(work)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + limit
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            raise RuntimeError(f"a client thread of process {self.index} did not finish")

    def close(self) -> None:
        for channel in self.channels:
            channel.close()


def _receive(conn: Connection, kind: str) -> Any:
    """The parent's next message, which must be ``kind``; its payload."""
    if not conn.poll(PARENT_TIMEOUT):
        raise TimeoutError(f"no {kind!r} from the parent within {PARENT_TIMEOUT:.0f} s")
    got, payload = conn.recv()
    if got != kind:
        raise RuntimeError(f"expected {kind!r} from the parent, got {got!r}")
    return payload


def client_process(conn: Connection, workload: Workload, index: int) -> None:
    """A client process's life: connect, ``ready``; load, ``loaded``; resend, ``resent``.

    Any failure is sent as ``("failed", traceback)`` instead.
    """
    process: _Process | None = None
    try:
        process = _Process(workload, index)
        for channel in process.channels:
            grpc.channel_ready_future(channel).result(timeout=STARTUP_TIMEOUT)
        conn.send(("ready", None))
        start_at = _receive(conn, "start")
        time.sleep(max(0.0, start_at - time.time()))
        stop_at = time.monotonic() + workload.seconds
        loads = [ThreadLoad() for _ in range(workload.threads)]
        limit = workload.seconds + CALL_TIMEOUT + 30
        process.in_threads(process.load, [(stop_at, out) for out in loads], limit)
        total = ThreadLoad()
        for out in loads:
            total.merge(out)
        acked, total.acked = total.acked, []  # the keys stay here; the parent gets the count
        conn.send(("loaded", (total, len(acked))))
        count = _receive(conn, "resend")
        chosen = np.random.default_rng(secrets.randbits(64)).choice(len(acked), count, False)
        picks = [acked[i] for i in sorted(chosen.tolist())]
        resent = [Resent() for _ in range(workload.threads)]
        work = [(picks[i :: workload.threads], part) for i, part in enumerate(resent)]
        process.in_threads(process.resend, work, CALL_TIMEOUT * (1 + count) + 30)
        merged = Resent()
        for part in resent:
            merged.merge(part)
        conn.send(("resent", merged))
    except BaseException:
        conn.send(("failed", traceback.format_exc()))
    finally:
        if process is not None:
            process.close()
        conn.close()
