"""Participant-shaped ingest: each call is one participant answering a nine-question survey.

Real surveys are answered one participant at a time: a call carries one report per
question, fresh report ids, and many participants are in flight at once, each on a
connection of their own. This module builds that traffic (with the product's own client
code, so every report is one a participant would send) and sends it from an asyncio gRPC
client, ``in_flight`` calls at a time over as many channels, timing each call.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
import numpy as np

from deniable.client._answer import build_reports
from deniable.shared.questions import question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

PARTICIPANTS = "participants"
IN_FLIGHT = 32  # participants whose call is in flight at once, one connection each
CALL_TIMEOUT = 60.0  # seconds, per call: a hang guard
EPSILON = 1.0
# (question type, mechanism, domain, question id, a true answer)
SURVEY: tuple[tuple[str, str, tuple[float, ...], str, bool | int | float], ...] = (
    ("binary", "randomized_response", (), "cheated", True),
    ("binary", "randomized_response", (), "lied", False),
    ("categorical", "grr", (5,), "commute", 2),
    ("categorical", "oue", (12,), "month", 7),
    ("categorical", "olh", (40,), "country", 13),
    ("numeric", "laplace", (0.0, 16.0), "sleep", 7.5),
    ("numeric", "duchi", (0.0, 100.0), "age", 40.0),
    ("numeric", "piecewise", (0.0, 10.0), "rating", 3.3),
    ("numeric", "hybrid", (0.0, 200.0), "income", 55.0),
)


def participant_questions() -> list[pb.Question]:
    """Nine questions, one per participant mechanism (two yes/no), each at ε = 1."""
    questions = []
    for kind, name, domain, question_id, _ in SURVEY:
        qtype = question_type(kind)
        question = qtype.question_for(qtype.build(name, *domain, epsilon=EPSILON))
        question.id, question.text = question_id, f"{question_id}?"
        questions.append(question)
    return questions


def participant_requests(survey: pb.Survey, count: int, rng: np.random.Generator) -> list[bytes]:
    """``count`` serialized calls, each one participant's nine fresh reports.

    Built with the client's own ``build_reports`` (a seeded generator instead of the
    CSPRNG, for speed and repeatability), so sizes and encodings are a participant's.
    """
    answers = {question_id: answer for *_, question_id, answer in SURVEY}
    return [
        pb.SubmitReportsRequest(
            reports=[p.report for p in build_reports(survey, answers, rng)]
        ).SerializeToString()
        for _ in range(count)
    ]


@dataclass
class Timed:
    """One measurement: calls answered OK, reports stored, seconds and each call's latency."""

    calls: int = 0
    reports: int = 0
    stored: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Calls per second."""
        return self.calls / self.seconds

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile of call latency, in milliseconds."""
        if len(self.latencies) < 2:
            return 1e3 * (self.latencies[0] if self.latencies else float("nan"))
        cuts = statistics.quantiles(self.latencies, n=1000, method="inclusive")
        return 1e3 * cuts[min(len(cuts) - 1, max(0, round(q * 10) - 1))]


async def _participants(
    address: str,
    requests: Sequence[bytes],
    in_flight: int,
    max_seconds: float,
    min_seconds: float,
    passes: int,
) -> Timed:
    # A connection each, as participants on their own devices have (channels of one
    # process would otherwise share one).
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [grpc.aio.insecure_channel(address, options=options) for _ in range(in_flight)]
    try:
        calls: list[grpc.aio.UnaryUnaryMultiCallable[bytes, pb.SubmitReportsResponse]] = [
            channel.unary_unary(
                "/deniable.v1.Aggregator/SubmitReports",
                request_serializer=None,
                response_deserializer=pb.SubmitReportsResponse.FromString,
            )
            for channel in channels
        ]
        for channel in channels:  # connect before timing
            await asyncio.wait_for(channel.channel_ready(), CALL_TIMEOUT)
        result = Timed()
        t0 = time.perf_counter()
        deadline = t0 + max_seconds

        async def participant(index: int) -> None:
            share = requests[index::in_flight]
            call = calls[index]
            for _ in range(passes):
                for request in share:
                    start = time.perf_counter()
                    response = await call(request, timeout=CALL_TIMEOUT)
                    end = time.perf_counter()
                    result.latencies.append(end - start)
                    result.calls += 1
                    result.stored += response.stored
                    if end > deadline:
                        return
                if time.perf_counter() - t0 >= min_seconds:
                    return

        await asyncio.gather(*(participant(i) for i in range(in_flight)))
        result.seconds = time.perf_counter() - t0
        return result
    finally:
        for channel in channels:
            await channel.close()


def send_participants(
    address: str,
    requests: Sequence[bytes],
    in_flight: int = IN_FLIGHT,
    *,
    max_seconds: float,
    min_seconds: float = 0.0,
    passes: int = 1,
) -> Timed:
    """Send ``requests`` with ``in_flight`` participants at once, each on its own channel.

    Each participant sends its share in turn (again, up to ``passes`` times, while less
    than ``min_seconds`` have passed) and stops once ``max_seconds`` have passed.
    """
    result = asyncio.run(
        _participants(address, requests, in_flight, max_seconds, min_seconds, passes)
    )
    result.reports = len(SURVEY) * result.calls
    return result


@dataclass
class ParticipantRun:
    """Paired rounds of participant traffic: the real server's and the bare server's."""

    real: list[Timed] = field(default_factory=list)
    bare: list[Timed] = field(default_factory=list)
    warm: Timed = field(default_factory=Timed)  # the warm-up's calls to the real server

    @property
    def stored(self) -> int:
        """Reports the real server acknowledged as stored, warm-up included."""
        return self.warm.stored + sum(r.stored for r in self.real)

    @property
    def sent(self) -> int:
        """Reports sent to the real server in calls answered OK, warm-up included."""
        return self.warm.reports + sum(r.reports for r in self.real)


def measure_participants(
    addresses: dict[str, str],
    survey: pb.Survey,
    rounds: int,
    calls: int,
    max_seconds: float,
    bare_min_seconds: float,
    seed: int,
) -> ParticipantRun:
    """``rounds`` pairs of measurements, real and bare alternating which goes first.

    Each round sends ``calls`` fresh participants' calls to the real server (every
    report id reaches it once), and the same calls to the bare server, resent until
    ``bare_min_seconds``.
    """
    rng = np.random.default_rng(seed)
    run = ParticipantRun()
    warm = participant_requests(survey, 2 * IN_FLIGHT, rng)  # connections and caches
    run.warm = send_participants(addresses["real"], warm, max_seconds=max_seconds)
    send_participants(addresses["bare"], warm, max_seconds=max_seconds)
    for round_index in range(rounds):
        requests = participant_requests(survey, calls, rng)
        order = ["real", "bare"] if round_index % 2 == 0 else ["bare", "real"]
        for name in order:
            if name == "real":
                run.real.append(
                    send_participants(addresses[name], requests, max_seconds=max_seconds)
                )
            else:
                run.bare.append(
                    send_participants(
                        addresses[name],
                        requests,
                        max_seconds=max_seconds,
                        min_seconds=bare_min_seconds,
                        passes=20,
                    )
                )
    return run


def report_participants(run: ParticipantRun) -> list[tuple[str, bool, str]]:
    """Print the participant table; the targets as (name, met, figure) lines."""
    real, bare = run.real, run.bare
    pairs = [r.rate / b.rate for r, b in zip(real, bare, strict=True)]
    paired = statistics.median(pairs)
    p99 = Timed(latencies=[t for r in real for t in r.latencies]).percentile(99)
    bare_p99 = Timed(latencies=[t for b in bare for t in b.latencies]).percentile(99)
    p50 = Timed(latencies=[t for r in real for t in r.latencies]).percentile(50)
    print(
        f"participants: {len(SURVEY)} reports per call, {IN_FLIGHT} in flight over as many "
        "connections (asyncio client)"
    )
    print(
        f"  real {statistics.median(r.rate for r in real):,.0f} calls/s "
        f"({min(r.rate for r in real):,.0f}-{max(r.rate for r in real):,.0f}), "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    print(
        f"  bare {statistics.median(b.rate for b in bare):,.0f} calls/s "
        f"({min(b.rate for b in bare):,.0f}-{max(b.rate for b in bare):,.0f}), "
        f"p99 {bare_p99:.1f} ms"
    )
    print(f"  paired real/bare {paired:.3f}x ({min(pairs):.2f}-{max(pairs):.2f})")
    return [
        ("participants: >= 0.5x the bare server's calls/s", paired >= 0.5, f"{paired:.2f}"),
        ("participants: daemon p99 <= 50 ms", p99 <= 50.0, f"{p99:.1f} ms"),
    ]
