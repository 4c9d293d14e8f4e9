"""Disk full: the daemon's database on a small tmpfs that fills up, then frees; nothing lost.

Mounts a ``--size`` MiB tmpfs (needs root), starts ``deniable-aggregator serve`` with its
SQLite database there, creates a survey and fills the disk with a file. A client then
sends yes/no batches of ``--batch`` reports until one is refused (at most
``--max-batches``), checks that the daemon still serves health, surveys and estimates,
frees the space, resends the refused batch with the same report ids and sends more. It
prints how many batches went through after the disk was full (the write-ahead log's
zero-filled headroom), the refusal's status and message, how long after freeing the next
batch was stored, and whether every acknowledged report was counted exactly once.
Exit code 1 if not, 2 if the tmpfs cannot be mounted.

    sudo python bench/disk_full.py --size 64 --batch 1000

(The checkpoint that follows moves the full WAL's pages into the database file, which
needs about as much room again: free more than the WAL holds, or the disk fills anew.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fault_harness import ADMIN_TOKEN, start_daemon

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

QUESTION = pb.Question(
    id="q", text="Q?", binary=pb.BinaryQuestion(),
    mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
)  # fmt: skip


def batch(survey_id: str, prefix: str, n: int) -> list[pb.Report]:
    return [
        pb.Report(report_id=f"{prefix}-{i:06d}", survey_id=survey_id, question_id="q",
                  mechanism=QUESTION.mechanism, bit=i % 3 == 0)
        for i in range(n)
    ]  # fmt: skip


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(bytes(1 << 16))
                handle.flush()
        except OSError:
            pass
    return filler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="tmpfs size in MiB (16..1024)")
    parser.add_argument("--batch", type=int, default=1000, help="reports per batch (1..10000)")
    parser.add_argument("--max-batches", type=int, default=2000, help="bound on the filling loop")
    args = parser.parse_args(argv)
    if not (16 <= args.size <= 1024 and 1 <= args.batch <= 10_000 and args.max_batches >= 1):
        parser.error("--size 16..1024, --batch 1..10000, --max-batches >= 1")
    with tempfile.TemporaryDirectory(prefix="deniable-disk-full-") as workdir:
        disk = Path(workdir) / "disk"
        disk.mkdir()
        mount = ["mount", "-t", "tmpfs", "-o", f"size={args.size}m", "tmpfs", str(disk)]
        mounted = subprocess.run(mount, capture_output=True, text=True, check=False)
        if mounted.returncode != 0:
            print(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}", file=sys.stderr)
            return 2
        try:
            return run(args, Path(workdir), disk)
        except RemoteError as error:  # a call after the space was freed
            print(f"FAILED: {error}", file=sys.stderr)
            return 1
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def run(args: argparse.Namespace, workdir: Path, disk: Path) -> int:
    daemon = start_daemon(workdir, f"sqlite:///{disk / 'agg.db'}")
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            survey = client.create_survey("Disk full", [QUESTION])
            filler = fill(disk)
            acknowledged, refused, after_full = 0, None, 0
            for k in range(args.max_batches):
                try:
                    acknowledged += client.submit_reports(
                        batch(survey.id, f"b{k}", args.batch)
                    ).stored
                    after_full += 1
                except RemoteError as failure:
                    refused = (k, failure)
                    break
            if refused is None:
                print(f"the disk never filled in {args.max_batches} batches", file=sys.stderr)
                return 1
            k, error = refused[0], refused[1]
            served = client.get_estimate(survey.id, "q").n == acknowledged
            filler.unlink()
            freed = time.perf_counter()
            resumed = client.submit_reports(batch(survey.id, f"b{k}", args.batch))
            resume_ms = 1e3 * (time.perf_counter() - freed)
            acknowledged += resumed.stored
            for j in range(k + 1, k + 11):
                acknowledged += client.submit_reports(batch(survey.id, f"b{j}", args.batch)).stored
            again = client.submit_reports(batch(survey.id, "b0", args.batch))
            n = client.get_estimate(survey.id, "q").n
    finally:
        daemon.process.terminate()
        code = daemon.process.wait(timeout=30)
    ok = served and resumed.stored == args.batch and again.already_stored == args.batch
    ok = ok and n == acknowledged and code == 0
    print(f"tmpfs {args.size} MiB, batches of {args.batch:,} yes/no reports")
    print(
        f"  batches stored after the disk was full: {after_full} (the WAL's zero-filled headroom)"
    )
    print(f"  then refused: {error.code}: {error.details}")
    print(f"  while full: estimates served and equal to the acknowledged reports: {served}")
    print(f"  space freed: the refused batch, resent with its ids, stored {resumed.stored:,} "
          f"in {resume_ms:.1f} ms; 10 more batches stored; a resend of the first batch: "
          f"{again.already_stored:,} already stored")  # fmt: skip
    print(f"  acknowledged {acknowledged:,}, estimate n {n:,}, daemon exit code {code}: "
          f"{'OK' if ok else 'FAILED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
