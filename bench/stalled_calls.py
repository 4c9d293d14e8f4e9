"""Stalled callers: another client's latency with 64 calls that never send their request.

Starts ``deniable-aggregator serve`` (127.0.0.1:0, a temporary SQLite database, default
limits: 16 workers) and measures one client's calls (GetSurvey, then SubmitReports batches
of 100, one after the other) three times: with nothing else going on, while ``--stalled``
calls have opened and never send their request and ``--idle`` connections sit connected,
and again after those went away. It prints each phase's latency (p50, p99, max) and the
ratio of the stalled phase's p50 to the quiet one's, measured in the same run. Exit code 1
if a call failed or a stalled call ended before it was released.

    python bench/stalled_calls.py --stalled 64 --idle 100 --calls 200
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
from fault_harness import ADMIN_TOKEN, start_daemon

from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb

SUBMIT = "/deniable.v1.Aggregator/SubmitReports"
# Each channel a connection of its own: a process's channels share one otherwise. At most
# 16 stalled calls per connection, the daemon's --calls-per-connection.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
TIMEOUT = 30.0  # per call; bounds every wait
QUESTION = pb.Question(
    id="q", text="Q?", binary=pb.BinaryQuestion(),
    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
)  # fmt: skip


def timed_calls(
    client: AggregatorClient, survey: pb.Survey, prefix: str, calls: int
) -> list[float]:
    """Alternate GetSurvey and a SubmitReports of 100; each call's latency in ms."""
    latencies = []
    for k in range(calls):
        start = time.perf_counter()
        if k % 2:
            client.get_survey(survey.id)
        else:
            reports = [
                pb.Report(report_id=f"{prefix}{k:05d}{i:03d}", survey_id=survey.id,
                          question_id="q", mechanism=QUESTION.mechanism, bit=i % 2 == 0)
                for i in range(100)
            ]  # fmt: skip
            client.submit_reports(reports)
        latencies.append(1e3 * (time.perf_counter() - start))
    return latencies


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"p50 {statistics.median(ordered):6.2f} ms  p99 {p99:6.2f} ms  max {ordered[-1]:6.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stalled", type=int, default=64, help="calls that never send")
    parser.add_argument("--idle", type=int, default=100, help="idle connections")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per phase")
    args = parser.parse_args(argv)
    if not (0 <= args.stalled <= 120 and 0 <= args.idle <= 1000 and 1 <= args.calls <= 10_000):
        parser.error(
            "--stalled 0..120 (the daemon allows 128 calls), --idle 0..1000, --calls 1..10000"
        )
    print(f"python {platform.python_version()}, grpcio {grpc.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="deniable-stalled-") as workdir:
        daemon = start_daemon(Path(workdir), f"sqlite:///{workdir}/agg.db")
        release = threading.Event()

        def never() -> Iterator[bytes]:
            release.wait(TIMEOUT * 10)
            return
            yield b""

        channels: list[grpc.Channel] = []
        failed = False
        try:
            with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1,
                                  timeout=TIMEOUT) as client:  # fmt: skip
                survey = client.create_survey("Stalled callers", [QUESTION])
                quiet = timed_calls(client, survey, "a", args.calls)
                channels = [grpc.insecure_channel(daemon.address, options=OWN_CONNECTION)
                            for _ in range((args.stalled + 15) // 16 + args.idle)]  # fmt: skip
                stalled = []
                for index in range(args.stalled):
                    method: grpc.StreamUnaryMultiCallable[bytes, pb.SubmitReportsResponse]
                    method = channels[index // 16].stream_unary(
                        SUBMIT, None, pb.SubmitReportsResponse.FromString
                    )
                    stalled.append(method.future(never()))
                for channel in channels[(args.stalled + 15) // 16 :]:
                    grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
                time.sleep(0.5)  # let every stalled call reach the daemon
                busy = timed_calls(client, survey, "b", args.calls)
                ended_early = sum(call.done() for call in stalled)
                release.set()
                for channel in channels:
                    channel.close()
                after = timed_calls(client, survey, "c", args.calls)
                n = client.get_estimate(survey.id, "q").n
        except grpc.RpcError as error:
            print(f"a call failed: {error}", file=sys.stderr)
            failed = True
        finally:
            release.set()
            daemon.process.terminate()
            daemon.process.wait(timeout=TIMEOUT)
    if failed:
        return 1
    print(f"{args.stalled} stalled calls on {(args.stalled + 15) // 16} connections, "
          f"{args.idle} idle connections; {args.calls} timed calls per phase")  # fmt: skip
    print(f"  quiet             {summary(quiet)}")
    print(f"  while stalled     {summary(busy)}")
    print(f"  after             {summary(after)}")
    ratio = statistics.median(busy) / statistics.median(quiet)
    print(f"  p50 while stalled / quiet: {ratio:.2f}x; stalled calls that ended early: "
          f"{ended_early}; reports stored {n:,}")  # fmt: skip
    expected = 3 * ((args.calls + 1) // 2) * 100  # every batch of the three phases, once
    return 0 if ended_early == 0 and n == expected else 1


if __name__ == "__main__":
    sys.exit(main())
