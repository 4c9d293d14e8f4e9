"""Load test: client processes x threads send mixed calls, then a resend, n and check must hold.

``--clients`` processes of ``--threads`` threads (each with its own channel) send calls one
after the other for ``--seconds`` (at most ``--max-requests`` per thread): a fraction
``--estimates`` of them ``GetEstimate``, the rest ``SubmitReports`` of fresh random 32-hex
report ids, ``--batch`` per call or, with ``--sizes mixed``, a log-uniform size in
1..``--max-size`` (see ``bench/load_client.py``). The daemon is a ``deniable-aggregator
serve`` started on 127.0.0.1:0 with a fresh SQLite database for each run, or a running one
(``--server HOST:PORT``, loopback only, with ``--admin-token-file``).

Every run ends with three checks: a sample of the acknowledged batches (``--resend-sample``,
at least ``--resend-min``) is resent unchanged and must come back all ``already_stored``;
the survey's estimate n must equal the reports acknowledged as stored; and, after SIGTERM,
``deniable-aggregator check --db URL --json`` must pass. ``--runs N`` repeats the run on
fresh databases. ``--baseline-aggregator PATH`` (see ``bench/baseline_daemon.sh``) runs the
same workload against that install's daemon, alternating with the current one for
``--rounds`` rounds, and prints PASS/FAIL for throughput (median ratio of the paired
rounds >= 1.0) and SubmitReports p99 <= 150 ms.

Output: a table (one run) or a line per run and a summary on stdout (``--json``: one JSON
document); progress on stderr. Exit code 0 when every run of the current daemon was clean,
1 otherwise (never because of speed, nor of the baseline's runs), 2 for invalid usage.

    python bench/load_test.py --clients 8 --threads 8 --sizes mixed --estimates 0.2 \
        --seconds 30 --runs 10
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import secrets
import sys
import tempfile
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import grpc
import load_client
import load_report
import numpy as np
from load_client import CALL_TIMEOUT, CHANNEL_OPTIONS, QUESTION, Resent, ThreadLoad, Workload
from load_daemon import Daemon, RssSampler, aggregator_command, run_check, start_daemon

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
STARTUP_TIMEOUT = 90.0


def _gather(pipes: list[Connection], kind: str, limit: float) -> list[Any]:
    """Every client process's next message, which must be ``kind``; the payloads in order."""
    got: dict[int, Any] = {}
    deadline = time.monotonic() + limit
    while len(got) < len(pipes):
        waiting = [pipe for i, pipe in enumerate(pipes) if i not in got]
        ready = wait(waiting, timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"{len(waiting)} client processes sent no {kind!r} in {limit:.0f} s")
        for index, pipe in enumerate(pipes):
            if index in got or pipe not in ready:
                continue
            try:
                message, payload = pipe.recv()
            except EOFError:
                raise RuntimeError(f"client process {index} exited before {kind!r}") from None
            if message != kind:
                raise RuntimeError(f"client process {index} sent {message!r}:\n{payload}")
            got[index] = payload
    return [got[i] for i in range(len(pipes))]


def resend_shares(counts: list[int], fraction: float, minimum: int) -> list[int]:
    """How many acknowledged batches each process resends: a uniform sample of them all.

    ``fraction`` of all acknowledged batches, at least ``minimum`` (or all if fewer).
    """
    total = sum(counts)
    if total == 0:
        return [0] * len(counts)
    sample = min(total, max(math.ceil(fraction * total), minimum))
    shares = np.random.default_rng().multivariate_hypergeometric(counts, sample)
    return [int(share) for share in shares]


def run_clients(
    args: argparse.Namespace, workload: Workload
) -> tuple[ThreadLoad, int, Resent, int]:
    """Start the client processes together, let them load, then resend a sample.

    Returns the merged load (its ``ended`` relative to the common start), how many
    batches were acknowledged, the merged resend and how many were to be resent.
    """
    context = multiprocessing.get_context("spawn")
    pipes: list[Connection] = []
    processes = []
    try:
        for index in range(args.clients):
            parent, child = context.Pipe()
            process = context.Process(
                target=load_client.client_process, args=(child, workload, index), daemon=True
            )
            process.start()
            child.close()
            pipes.append(parent)
            processes.append(process)
        _gather(pipes, "ready", STARTUP_TIMEOUT + 2 * args.clients)
        start_at = time.time() + 0.5
        for pipe in pipes:
            pipe.send(("start", start_at))
        loaded = _gather(pipes, "loaded", args.seconds + CALL_TIMEOUT + 120)
        total = ThreadLoad()
        for load, _ in loaded:
            total.merge(load)
        total.ended -= start_at
        shares = resend_shares([count for _, count in loaded], args.resend_sample, args.resend_min)
        print(f"  load done; resending {sum(shares):,} acknowledged batches", file=sys.stderr)
        began = time.monotonic()
        for pipe, share in zip(pipes, shares, strict=True):
            pipe.send(("resend", share))
        resent = Resent()
        limit = 30 * args.seconds + 2 * CALL_TIMEOUT + 120  # an already stored id costs more
        for part in _gather(pipes, "resent", limit):
            resent.merge(part)
        resent.seconds = time.monotonic() - began
        return total, sum(count for _, count in loaded), resent, sum(shares)
    finally:
        for pipe in pipes:
            pipe.close()
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)


def measure(
    args: argparse.Namespace, target: str, token: str, daemon: Daemon | None
) -> dict[str, Any]:
    """Create a survey, run the clients and the resend, read n, close the survey; figures."""
    metadata = (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        stub = pb_grpc.AggregatorStub(channel)
        title = f"load test {time.strftime('%Y-%m-%d %H:%M:%S')}"
        create = pb.CreateSurveyRequest(title=title, questions=[QUESTION])
        survey = stub.CreateSurvey(create, timeout=CALL_TIMEOUT, metadata=metadata)
        workload = Workload(
            target=target,
            survey_id=survey.id,
            threads=args.threads,
            sizes=args.sizes,
            batch=args.batch if args.sizes == "fixed" else args.max_size,
            estimates=args.estimates,
            ids=args.ids,
            seconds=args.seconds,
            max_requests=args.max_requests,
        )
        sampler = RssSampler(daemon.process.pid) if daemon is not None else None
        load, acked_batches, resent, planned = run_clients(args, workload)
        rss = sampler.stop() if sampler is not None else None
        question = pb.GetEstimateRequest(survey_id=survey.id, question_id=QUESTION.id)
        n = stub.GetEstimate(question, timeout=CALL_TIMEOUT).n
        close = pb.CloseSurveyRequest(survey_id=survey.id)
        stub.CloseSurvey(close, timeout=CALL_TIMEOUT, metadata=metadata)
    elapsed = max(load.ended, 1e-9)
    calls = load.submits + load.estimates
    return {
        "target": target,
        "survey_id": survey.id,
        "workload": {
            "clients": args.clients,
            "threads": args.threads,
            "sizes": args.sizes,
            "batch": workload.batch,
            "estimates": args.estimates,
            "ids": args.ids,
            "seconds": args.seconds,
        },
        "seconds": round(elapsed, 3),
        "calls": calls,
        "submit_calls": load.submits,
        "estimate_calls": load.estimates,
        "estimates_empty": load.estimates_empty,
        "reports_acked": load.reports_acked,
        "stored": load.stored,
        "already_stored": load.already_stored,
        "acked_batches": acked_batches,
        "mean_batch": round(load.reports_acked / max(1, acked_batches), 1),
        "reports_per_s": round(load.reports_acked / elapsed, 1),
        "calls_per_s": round(calls / elapsed, 1),
        "latency_ms": {
            "submit": load_report.percentiles(load.submit_latencies),
            "estimate": load_report.percentiles(load.estimate_latencies),
        },
        "errors": dict(load.errors),
        "error_count": sum(load.errors.values()),
        "resend": {
            "planned": planned,
            "batches": resent.batches,
            "reports": resent.reports,
            "stored": resent.stored,
            "already_stored": resent.already_stored,
            "batches_stored_again": resent.batches_stored_again,
            "changed": resent.changed,
            "errors": dict(resent.errors),
            "seconds": round(resent.seconds, 2),
            "latency_ms": load_report.percentiles(resent.latencies),
        },
        "estimate_n": n,
        "daemon_rss_mb": rss,
        "_latencies": load.submit_latencies,
    }


def run_once(args: argparse.Namespace, command: str, label: str, run: int) -> dict[str, Any]:
    """One run on a fresh database (or ``--server``): the figures and the verdicts."""
    print(f"{label} run {run}: {command}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="deniable-load-") as workdir:
        daemon = None
        if args.server:
            target, token, db_url = args.server, args.admin_token_file.read_text().strip(), args.db
        else:
            token = secrets.token_urlsafe(32)
            daemon = start_daemon(command, Path(workdir), token)
            target, db_url = daemon.address, daemon.db_url
        try:
            result = measure(args, target, token, daemon)
        finally:
            code = daemon.stop() if daemon is not None else None
        result["daemon_exit_code"] = code
        result["daemon_log"] = daemon.log_summary() if daemon is not None else None
        result["check"] = run_check(command, db_url)
    resend, check = result["resend"], result["check"]
    verdicts = {
        # Every id was fresh: each acknowledged report newly stored, none already.
        "load": result["error_count"] == 0
        and result["stored"] == result["reports_acked"]
        and result["already_stored"] == 0,
        "resend": resend["stored"] == 0
        and not resend["errors"]
        and resend["changed"] == 0
        and resend["batches"] == resend["planned"]
        and resend["already_stored"] == resend["reports"],
        "estimate": result["estimate_n"] == result["stored"],
        "check": check["ok"] if check["ran"] else None,
        "daemon": None if code is None else code == 0,
    }
    result.update(label=label, run=run, aggregator=command, verdicts=verdicts)
    result["ok"] = all(verdict is not False for verdict in verdicts.values())
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--clients", type=int, default=8, help="client processes (default 8)")
    add("--threads", type=int, default=1, help="threads per process, a channel each (default 1)")
    add("--sizes", choices=("fixed", "mixed"), default="fixed", help="batch sizes (default fixed)")
    add("--batch", type=int, default=100, help="reports per call with --sizes fixed (default 100)")
    add("--max-size", type=int, default=2000, help="largest --sizes mixed batch (default 2000)")
    add("--estimates", type=float, default=0.0, help="fraction of calls that are GetEstimate")
    add(
        "--ids",
        choices=("random", "structured"),
        default="random",
        help="report ids (default random 32 hex)",
    )
    add("--seconds", type=float, default=20.0, help="load time per run (default 20)")
    add("--max-requests", type=int, default=100_000, help="most calls per thread (default 100000)")
    add("--resend-sample", type=float, default=0.05, help="fraction of acked batches resent (0.05)")
    add("--resend-min", type=int, default=50, help="resend at least this many batches (50)")
    add("--runs", type=int, default=1, help="runs, each on a fresh database (default 1)")
    add(
        "--aggregator",
        metavar="PATH",
        help="the current deniable-aggregator (default: this venv's)",
    )
    add("--baseline-aggregator", metavar="PATH", help="compare with this install's daemon")
    add("--rounds", type=int, default=3, help="baseline rounds, alternating (default 3)")
    add("--server", metavar="HOST:PORT", help="a running daemon (loopback)")
    add("--admin-token-file", type=Path, help="its admin token (with --server)")
    add("--db", help="its database URL, for 'deniable-aggregator check'")
    add("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if not (
        1 <= args.clients <= 256 and 1 <= args.threads <= 64 and args.clients * args.threads <= 256
    ):
        parser.error("--clients must be 1..256, --threads 1..64, and their product at most 256")
    if not (1 <= args.batch <= 10_000 and 1 <= args.max_size <= 10_000):
        parser.error("--batch and --max-size must be 1..10000")
    if not (0 < args.seconds <= 3600 and args.max_requests >= 1 and 0 <= args.estimates <= 1):
        parser.error("--seconds must be in (0, 3600], --max-requests >= 1, --estimates in [0, 1]")
    if not (0 <= args.resend_sample <= 1 and args.resend_min >= 0):
        parser.error("--resend-sample must be in [0, 1] and --resend-min >= 0")
    if not (1 <= args.runs <= 100 and 1 <= args.rounds <= 50):
        parser.error("--runs must be 1..100 and --rounds 1..50")
    if args.baseline_aggregator and (args.server or args.runs > 1):
        parser.error(
            "--baseline-aggregator starts its own daemons: no --server, and --rounds, not --runs"
        )
    for option in ("aggregator", "baseline_aggregator"):
        path = getattr(args, option)
        if path and not Path(path).is_file():
            parser.error(f"--{option.replace('_', '-')} {path}: no such file")
    if args.server:
        if not args.server.startswith(tuple(f"{host}:" for host in LOOPBACK)):
            parser.error(f"--server {args.server}: only loopback addresses (127.0.0.1:PORT)")
        if args.admin_token_file is None:
            parser.error("--server needs --admin-token-file")
    return args


def _emit(args: argparse.Namespace, line: str) -> None:
    if not args.json:
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the load test; 0 when every run of the current daemon was clean."""
    args = parse_args(argv)
    current = args.aggregator or aggregator_command()
    plan = [("current", current)] * args.runs
    if args.baseline_aggregator:  # alternate, the first of each pair rotating
        pairs = [("current", current), ("baseline", args.baseline_aggregator)]
        plan = [pair for r in range(args.rounds) for pair in (pairs if r % 2 == 0 else pairs[::-1])]
    results: list[dict[str, Any]] = []
    latencies: dict[str, list[float]] = {"current": [], "baseline": []}
    for label, command in plan:
        run = 1 + sum(r["label"] == label for r in results)
        result = run_once(args, command, label, run)
        latencies[label] += result.pop("_latencies")
        results.append(result)
        if len(plan) > 1:
            _emit(args, load_report.run_line(result))
    if len(plan) == 1:
        _emit(args, load_report.table(results[0]))
    document: dict[str, Any] = {"runs": results, "comparison": None}
    for label in ("current", "baseline") if args.baseline_aggregator else ("current",):
        document[label] = figures = load_report.summary([r for r in results if r["label"] == label])
        if len(plan) > 1:
            _emit(args, load_report.summary_line(label, figures))
    if args.baseline_aggregator:
        document["comparison"] = compared = load_report.comparison(
            [r for r in results if r["label"] == "current"],
            [r for r in results if r["label"] == "baseline"],
            latencies,
        )
        for line in load_report.comparison_lines(compared):
            _emit(args, line)
    document["ok"] = all(r["ok"] for r in results if r["label"] == "current")
    if args.json:
        print(json.dumps(document))
    return 0 if document["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
