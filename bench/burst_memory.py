"""A burst of big SubmitReports at once: the daemon's peak resident memory, against 1 GB.

Starts ``deniable-aggregator serve`` as a process of its own (127.0.0.1:0, a temporary
SQLite database, the default limits unless ``--serve-arg`` adds options), creates a survey
with one multiple-choice question of ``--options`` options answered with OUE, and has
``--processes`` client processes build ``--calls`` requests in all (valid reports, fresh
ids; by default full batches of 10,000 reports of 1,024 bits with 128-character ids,
3.62 MB each: the largest batch a participant can send). Once every request is built, all
of them are sent at once, each on a connection of its own (``--per-channel N``: N calls
share one, as a client sending several at once would). The daemon's
VmRSS is sampled from /proc every 20 ms, and the kernel's own peak (VmHWM, restarted just
before the burst) is read at the end. Printed: its resident memory before, at its peak and
after, every call's outcome by status code (and reason), and PASS/FAIL for a peak under
1 GB (10^9 bytes). At the end the survey's estimate must count exactly the reports the OK
responses say they stored: exit code 1 if not, if the daemon died, or a call ended some
other way than OK, RESOURCE_EXHAUSTED or UNAVAILABLE. Every wait is bounded.

    python bench/burst_memory.py                      # 256 calls: 8 processes x 32
    python bench/burst_memory.py --calls 64 --json
    python bench/burst_memory.py --per-channel 32       # 8 connections of 32 calls
    python bench/burst_memory.py --serve-arg=--max-inflight-bytes=67108864
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from burst_clients import Outcome, Plan, run
from burst_daemon import ADMIN_TOKEN, Daemon, question

from deniable.client._remote import AggregatorClient, RemoteError

TARGET_BYTES = 10**9
SAMPLE_S = 0.02
EXPECTED = {"OK", "RESOURCE_EXHAUSTED", "UNAVAILABLE"}
MIB = 1 << 20


def _reason(outcome: Outcome) -> str:
    """A short name for why a call ended: its code and the limit, or its details' start."""
    details = outcome.details
    for marker, reason in (
        ("Concurrent RPC limit", "max-concurrent-rpcs"),
        ("--max-inflight-bytes", "max-inflight-bytes"),
        ("larger than max", "max-message-bytes"),
    ):
        if marker in details:
            return f"{outcome.code} ({reason})"
    return f"{outcome.code} ({details[:140]})" if details else outcome.code


def _sample(daemon: Daemon, stop: threading.Event, peak: list[int]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], daemon.rss_bytes())
        time.sleep(SAMPLE_S)


def _stored(address: str, survey_id: str, question_id: str) -> tuple[int, int]:
    """The survey's report count and its question's estimate's n (0 before any report)."""
    with AggregatorClient(address, admin_token=ADMIN_TOKEN, attempts=1, timeout=60) as client:
        reports = client.get_survey(survey_id).reports
        try:
            n = client.get_estimate(survey_id, question_id).n
        except RemoteError as error:
            if error.code != "FAILED_PRECONDITION" or reports:
                raise
            n = 0
    return reports, n


def burst(args: argparse.Namespace, daemon: Daemon) -> dict[str, Any]:
    """Create the survey, build the requests in the client processes, fire, measure."""
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
        survey = client.create_survey("Burst", [question(args.options)])
    mechanism = survey.questions[0].mechanism.SerializeToString()
    context = multiprocessing.get_context("spawn")  # no fork after gRPC started in this one
    ready: Any = context.Queue()
    results: Any = context.Queue()
    start = context.Event()
    shares = [args.calls // args.processes + (p < args.calls % args.processes)
              for p in range(args.processes)]  # fmt: skip
    workers = []
    for process, calls in enumerate(shares):
        plan = Plan(daemon.address, survey.id, survey.questions[0].id, mechanism, args.options,
                    process, calls, args.reports, args.id_length, args.per_channel,
                    args.timeout)  # fmt: skip
        worker = context.Process(target=run, args=(plan, ready, start, results), daemon=True)
        worker.start()
        workers.append(worker)
    for _ in workers:
        ready.get(timeout=args.timeout)
    daemon.settle()
    exact = daemon.reset_peak()
    before = daemon.rss_bytes()
    peak, stop = [before], threading.Event()
    sampler = threading.Thread(target=_sample, args=(daemon, stop, peak), daemon=True)
    sampler.start()
    started = time.perf_counter()
    start.set()
    outcomes: list[Outcome] = []
    for _ in workers:
        outcomes.extend(results.get(timeout=2 * args.timeout))
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    sampled = peak[0]
    if exact:  # the kernel's peak misses nothing between two samples
        peak[0] = max(peak[0], daemon.rss_bytes("VmHWM"))
    for worker in workers:
        worker.join(timeout=args.timeout)
    alive = daemon.process.poll() is None
    reports, n = _stored(daemon.address, survey.id, survey.questions[0].id) if alive else (-1, -1)
    daemon.settle()
    stored = sum(outcome.stored for outcome in outcomes)
    return {
        "calls": args.calls, "processes": args.processes, "per_channel": args.per_channel,
        "request_bytes": max(outcome.request_bytes for outcome in outcomes),
        "serve_args": args.serve_arg, "seconds": round(seconds, 2),
        "rss_before_mib": round(before / MIB, 1), "rss_peak_mib": round(peak[0] / MIB, 1),
        "rss_sampled_peak_mib": round(sampled / MIB, 1), "peak_from_vmhwm": exact,
        "rss_after_mib": round(daemon.rss_bytes() / MIB, 1) if alive else None,
        "peak_bytes": peak[0], "target_bytes": TARGET_BYTES, "pass": peak[0] < TARGET_BYTES,
        "codes": dict(Counter(outcome.code for outcome in outcomes).most_common()),
        "reasons": dict(Counter(_reason(outcome) for outcome in outcomes).most_common()),
        "stored_acknowledged": stored, "survey_reports": reports, "estimate_n": n,
        "daemon_alive": alive,
    }  # fmt: skip


def problems(result: dict[str, Any]) -> list[str]:
    """What was measured wrong: a count mismatch, a dead daemon, an unexpected outcome."""
    found = []
    if not result["daemon_alive"]:
        found.append("the daemon died during the burst")
    elif not result["stored_acknowledged"] == result["survey_reports"] == result["estimate_n"]:
        found.append(
            f"stored {result['stored_acknowledged']} by the OK responses, but the survey has "
            f"{result['survey_reports']} reports and its estimate counts {result['estimate_n']}"
        )
    unexpected = set(result["codes"]) - EXPECTED
    if unexpected:
        found.append(f"calls ended with {sorted(unexpected)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=256, help="SubmitReports in the burst")
    parser.add_argument("--processes", type=int, default=8, help="client processes")
    parser.add_argument("--per-channel", type=int, default=1, help="calls per channel")
    parser.add_argument("--reports", type=int, default=10_000, help="reports per call")
    parser.add_argument("--options", type=int, default=1024, help="OUE bits per report")
    parser.add_argument("--id-length", type=int, default=128, help="characters per report id")
    parser.add_argument("--timeout", type=float, default=120.0, help="per call, and each wait")
    parser.add_argument("--serve-arg", action="append", default=[], help="a serve option")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= 1024 and 1 <= args.processes <= min(32, args.calls)
            and args.per_channel >= 1 and 1 <= args.reports <= 100_000
            and 2 <= args.options <= 1024 and 24 <= args.id_length <= 128
            and 1 <= args.timeout <= 600):  # fmt: skip
        parser.error("--calls 1..1024, --processes 1..32 (at most --calls), --per-channel >= 1, "
                     "--reports 1..100000, --options 2..1024, --id-length 24..128, "
                     "--timeout 1..600")  # fmt: skip
    if not args.json:
        print(f"# python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="deniable-burst-") as workdir:
        daemon = Daemon.start(Path(workdir), args.serve_arg, args.timeout)
        try:
            result = burst(args, daemon)
        finally:
            daemon.stop()
    found = problems(result)
    result["problems"] = found
    if args.json:
        print(json.dumps(result))
    else:
        _print(result)
    return 1 if found else 0


def _print(result: dict[str, Any]) -> None:
    print(f"{result['calls']} SubmitReports of {result['request_bytes']:,} bytes from "
          f"{result['processes']} processes, {result['per_channel']} per channel, serve "
          f"{' '.join(result['serve_args']) or '(defaults)'}: {result['seconds']} s")  # fmt: skip
    for reason, count in result["reasons"].items():
        print(f"  {count:4d} {reason}")
    print(f"stored {result['stored_acknowledged']:,} by OK responses; the survey has "
          f"{result['survey_reports']:,}, its estimate n {result['estimate_n']:,}")  # fmt: skip
    how = "VmHWM" if result["peak_from_vmhwm"] else "sampled"
    print(f"daemon RSS {result['rss_before_mib']} MiB before, {result['rss_peak_mib']} MiB peak "
          f"({how}; sampled every 20 ms: {result['rss_sampled_peak_mib']} MiB), "
          f"{result['rss_after_mib']} MiB after")  # fmt: skip
    verdict = "PASS" if result["pass"] else "FAIL"
    print(f"peak {result['peak_bytes']:,} bytes, target < {TARGET_BYTES:,} (1 GB): {verdict}")
    for problem in result["problems"]:
        print(f"PROBLEM: {problem}")


if __name__ == "__main__":
    sys.exit(main())
