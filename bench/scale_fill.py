"""Filling a daemon with yes/no reports fast: batches built with numpy, sent as raw bytes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import grpc
import numpy as np

from deniable.shared.wire.v1 import aggregator_pb2 as pb

HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
CALL_TIMEOUT = 120.0  # seconds per call: a hang guard


def _frame(report: bytes) -> bytes:
    assert len(report) < 128
    return bytes([0x0A, len(report)]) + report


class Filler:
    """Client threads that send batches of fresh yes/no reports until a total is stored.

    Each batch is a template report repeated, with random 32-hex-digit ids (128 random
    bits: no two repeat in practice) and random bits written into its columns, so
    building a batch of 10,000 costs about a millisecond and the daemon, not the
    client, sets the pace.
    """

    def __init__(
        self, address: str, survey_id: str, question_id: str, batch: int, clients: int
    ) -> None:
        template = pb.Report(
            report_id="0" * 32,
            survey_id=survey_id,
            question_id=question_id,
            mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
            bit=True,
        ).SerializeToString()
        self.row = np.frombuffer(_frame(template), dtype=np.uint8)
        self.id_at = 4  # frame tag and length, id tag and length
        self.batch, self.clients = batch, clients
        self.channels: list[grpc.Channel] = []
        self.connect(address)
        self.sent = 0  # reports sent and acknowledged as stored
        self._reserved = 0
        self._lock = threading.Lock()

    def connect(self, address: str) -> None:
        """Send to the daemon at ``address`` from now on (after a restart)."""
        for channel in self.channels:
            channel.close()
        self.channels = [grpc.insecure_channel(address) for _ in range(self.clients)]

    def close(self) -> None:
        """Close the channels."""
        for channel in self.channels:
            channel.close()

    def _calls(self) -> list[Callable[..., pb.SubmitReportsResponse]]:
        return [
            channel.unary_unary(
                "/deniable.v1.Aggregator/SubmitReports",
                request_serializer=lambda data: data,
                response_deserializer=pb.SubmitReportsResponse.FromString,
            )
            for channel in self.channels
        ]

    def build(self, rng: np.random.Generator, count: int) -> bytes:
        """A serialized SubmitReportsRequest of ``count`` fresh reports."""
        frames = np.tile(self.row, (count, 1))
        raw = rng.integers(0, 256, size=(count, 16), dtype=np.uint8)
        ids = frames[:, self.id_at : self.id_at + 32]
        ids[:, 0::2] = HEX[raw >> 4]
        ids[:, 1::2] = HEX[raw & 0x0F]
        frames[:, -1] = rng.integers(0, 2, size=count, dtype=np.uint8)
        return frames.tobytes()

    def fill_to(self, total: int, deadline: float) -> None:
        """Send batches from every client until ``total`` reports are stored."""
        errors: list[BaseException] = []

        def client(call: Callable[..., pb.SubmitReportsResponse]) -> None:
            rng = np.random.default_rng()
            try:
                while time.monotonic() < deadline:
                    with self._lock:
                        count = min(self.batch, total - self._reserved)
                        if count <= 0:
                            return
                        self._reserved += count
                    reply = call(self.build(rng, count), timeout=CALL_TIMEOUT)
                    if reply.stored != count:
                        raise RuntimeError(f"stored {reply.stored} of {count} fresh reports")
                    with self._lock:
                        self.sent += count
            except BaseException as error:  # reported by the caller
                errors.append(error)

        threads = [threading.Thread(target=client, args=(call,)) for call in self._calls()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        if self.sent < total:
            raise RuntimeError(f"the fill stopped at {self.sent:,} of {total:,} (time bound)")
