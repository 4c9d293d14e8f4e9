"""A fault-injection client process: streams yes/no batches and records what was acknowledged.

Run by ``bench/fault_injection.py`` (one process per client). Its state directory holds:

- ``pending.json``: the batch being sent (ids and bits), written and fsynced *before* the
  RPC and removed once it is acknowledged, so a batch whose reply was lost to a crash is
  resent later with the same report ids and values;
- ``acked``: one report id per line, appended and fsynced only *after* the RPC succeeded;
- ``retried``: one JSON line per resent pending batch: its size and the reply's ``stored``
  and ``already_stored``.

Exit codes: 0 done (batch or time limit, or ``--retry-only``), 3 the aggregator is
unreachable (the batch in flight stays pending), 1 any other error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

UNREACHABLE = 3
QUESTION_ID = "cheated"
ALPHA = 0.5


def create_survey(admin: AggregatorClient, title: str) -> str:
    """Create the one yes/no survey the fault clients answer; its id."""
    question = pb.Question(
        id=QUESTION_ID,
        text="Have you ever cheated in an exam?",
        binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=ALPHA)),
    )
    return admin.create_survey(title, [question]).id


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_pending(state: Path, ids: Sequence[str], bits: Sequence[bool]) -> None:
    """Durably record the batch about to be sent (atomic replace, file and directory fsynced)."""
    temporary = state / "pending.tmp"
    with temporary.open("w") as handle:
        json.dump({"ids": list(ids), "bits": list(bits)}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(state / "pending.json")
    _fsync_dir(state)


def read_pending(state: Path) -> tuple[list[str], list[bool]] | None:
    """The batch that was sent but not acknowledged, if any."""
    path = state / "pending.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return list(data["ids"]), list(data["bits"])


def clear_pending(state: Path) -> None:
    (state / "pending.json").unlink(missing_ok=True)
    _fsync_dir(state)


def append_fsynced(path: Path, text: str) -> None:
    """Append ``text`` and fsync before returning."""
    with path.open("a") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def acked_ids(state: Path) -> list[str]:
    """Every report id this client had acknowledged, in order."""
    path = state / "acked"
    return path.read_text().split() if path.exists() else []


def retried(state: Path) -> list[dict[str, int]]:
    """One record per pending batch this client resent."""
    path = state / "retried"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def send(
    client: AggregatorClient, survey_id: str, ids: Sequence[str], bits: Sequence[bool]
) -> pb.SubmitReportsResponse:
    mechanism = pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=ALPHA))
    reports = [
        pb.Report(
            report_id=report_id,
            survey_id=survey_id,
            question_id=QUESTION_ID,
            mechanism=mechanism,
            bit=bit,
        )
        for report_id, bit in zip(ids, bits, strict=True)
    ]
    return client.submit_reports(reports)


def run(args: argparse.Namespace) -> int:
    state: Path = args.state
    state.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.max_seconds
    with AggregatorClient(args.server, attempts=1, timeout=args.timeout) as client:
        try:
            pending = read_pending(state)
            if pending is not None:
                reply = send(client, args.survey, *pending)
                append_fsynced(state / "acked", "".join(f"{i}\n" for i in pending[0]))
                record: dict[str, Any] = {
                    "reports": len(pending[0]),
                    "stored": reply.stored,
                    "already_stored": reply.already_stored,
                }
                append_fsynced(state / "retried", json.dumps(record) + "\n")
                clear_pending(state)
            if args.retry_only:
                return 0
            for _ in range(args.max_batches):
                if time.monotonic() > deadline:
                    break
                ids = [rng.randbytes(16).hex() for _ in range(args.batch)]
                bits = [rng.random() < 0.5 for _ in range(args.batch)]
                write_pending(state, ids, bits)
                send(client, args.survey, ids, bits)
                append_fsynced(state / "acked", "".join(f"{i}\n" for i in ids))
                clear_pending(state)
        except RemoteError as error:
            if error.retryable:
                return UNREACHABLE
            print(f"fault client {state.name}: {error}", file=sys.stderr)
            return 1
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", required=True, help="aggregator HOST:PORT (loopback)")
    parser.add_argument("--survey", required=True, help="survey id")
    parser.add_argument("--state", type=Path, required=True, help="this client's state dir")
    parser.add_argument("--seed", type=int, required=True, help="seeds ids and bits")
    parser.add_argument("--batch", type=int, default=200, help="reports per batch")
    parser.add_argument("--max-batches", type=int, default=1000, help="batch limit")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time limit")
    parser.add_argument("--timeout", type=float, default=10.0, help="per-RPC deadline (s)")
    parser.add_argument(
        "--retry-only", action="store_true", help="resend the pending batch, then exit"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(parse_args(None)))
