"""Export of stored reports in flat memory: peak RSS of the export and the daemon at 10^6 and 10^7.

A ``deniable-aggregator serve`` daemon (a subprocess, 127.0.0.1, a temporary SQLite file)
is filled with yes/no reports up to each size of ``--reports`` in turn; at each size
``deniable-aggregator export SURVEY --what reports`` writes them all to a file, as a
separate process. Measured: the export's wall time and rows per second, its peak resident
memory (``ru_maxrss`` of that child alone, from ``wait4``), and the daemon's resident
memory before and at its peak during the export (``VmRSS`` sampled every 20 ms).

The baseline is the smallest size, measured in the same run: the ratios of the largest
size's peaks to it say whether memory stays flat while the rows grow tenfold. Targets
(printed PASS/FAIL): the export's peak RSS at most 1.1 times the baseline's, and the
daemon's growth during the export at most 10 MB more than during the baseline's.
Everything is bounded by ``--max-seconds``.

    python bench/export_memory.py                          # 10^6 and 10^7 reports
    python bench/export_memory.py --reports 100000,1000000 --format parquet
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from scale_fill import Filler
from storage_scale import QUESTION, TOKEN, Daemon, free_port, wait_serving_port

from deniable.client._remote import AggregatorClient

BIN = Path(sys.executable).parent
CLIENT_TARGET = 1.1  # export peak RSS, largest / smallest size
DAEMON_TARGET = 10.0  # MB more daemon growth during the largest export than the smallest
SAMPLE = 0.02  # seconds between samples of the daemon's VmRSS


@dataclass(frozen=True)
class Measured:
    """One export: its size, time, and the memory it and the daemon took."""

    reports: int
    seconds: float
    export_peak_mb: float
    export_early_mb: float  # the export's RSS a fifth of the way through
    daemon_before_mb: float
    daemon_peak_mb: float
    file_mb: float

    @property
    def daemon_growth_mb(self) -> float:
        """How much the daemon grew during the export."""
        return self.daemon_peak_mb - self.daemon_before_mb


def _rss_mb(pid: int) -> float | None:
    """A process's resident memory from /proc, or None once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def _sample(daemon: Daemon, child: subprocess.Popen[bytes], stop: threading.Event,
            daemon_peak: list[float], trace: list[float]) -> None:  # fmt: skip
    """Keep the daemon's peak RSS, and the export's RSS over time, until ``stop``."""
    while not stop.is_set():
        daemon_peak[0] = max(daemon_peak[0], daemon.rss_mb())
        rss = _rss_mb(child.pid)
        if rss is not None:
            trace.append(rss)
        time.sleep(SAMPLE)


def export(daemon: Daemon, survey_id: str, out: Path, file_format: str, timeout: float) -> Measured:
    """Run one export as a child process; its peak RSS alone from ``wait4``."""
    daemon.settle()
    before = daemon.rss_mb()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["DENIABLE_AGGREGATOR_ADMIN_TOKEN"] = TOKEN
    started = time.perf_counter()
    child = subprocess.Popen(
        [str(BIN / "deniable-aggregator"), "export", survey_id, "--what", "reports",
         "--format", file_format, "--server", daemon.address, "--out", str(out), "--json"],
        stdout=subprocess.PIPE, env=env,
    )  # fmt: skip
    peak, stop = [before], threading.Event()
    trace: list[float] = []
    sampler = threading.Thread(target=_sample, args=(daemon, child, stop, peak, trace), daemon=True)
    sampler.start()
    timer = threading.Timer(timeout, child.kill)  # a hang guard, never a measurement
    timer.start()
    assert child.stdout is not None
    written = json.loads(child.stdout.read())
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    timer.cancel()
    stop.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"export exited {os.waitstatus_to_exitcode(status)}")
    child.returncode = 0
    return Measured(
        reports=int(written["rows"]),
        seconds=seconds,
        export_peak_mb=usage.ru_maxrss / 1024,
        export_early_mb=trace[len(trace) // 5] if trace else math.nan,
        daemon_before_mb=before,
        daemon_peak_mb=peak[0],
        file_mb=out.stat().st_size / (1 << 20),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", default="1000000,10000000", help="sizes, comma-separated")
    parser.add_argument("--format", dest="file_format", default="csv")
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.reports.split(","))
    deadline = time.monotonic() + args.max_seconds
    print(f"# {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    print(f"# sizes {sizes}, format {args.file_format}, batches of {args.batch:,}")
    rows: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="export-memory-") as folder:
        workdir = Path(folder)
        daemon = Daemon(workdir, workdir / "aggregator.db", free_port())
        try:
            wait_serving_port(daemon)
            with AggregatorClient(daemon.address, admin_token=TOKEN) as client:
                survey_id = client.create_survey("Export memory", [QUESTION]).id
            filler = Filler(daemon.address, survey_id, "q", args.batch, args.clients)
            for size in sizes:
                filler.fill_to(size, deadline)
                out = workdir / f"reports-{size}.{args.file_format}"
                left = deadline - time.monotonic()
                measured = export(daemon, survey_id, out, args.file_format, left)
                out.unlink()
                rows.append(measured)
                print(
                    f"{measured.reports:>12,} reports: {measured.seconds:7.1f} s "
                    f"({measured.reports / measured.seconds:>9,.0f} rows/s), "
                    f"file {measured.file_mb:,.0f} MB; export RSS "
                    f"{measured.export_early_mb:6.1f} MB a fifth of the way, peak "
                    f"{measured.export_peak_mb:6.1f} MB; daemon RSS "
                    f"{measured.daemon_before_mb:6.1f} -> {measured.daemon_peak_mb:6.1f} MB "
                    "during the export",
                    flush=True,
                )
            filler.close()
        finally:
            daemon.stop()
    base, last = rows[0], rows[-1]
    ratio = last.export_peak_mb / base.export_peak_mb
    extra = last.daemon_growth_mb - base.daemon_growth_mb
    ok_client, ok_daemon = ratio <= CLIENT_TARGET, extra <= DAEMON_TARGET
    print(
        f"export peak RSS {last.reports:,} / {base.reports:,} reports: {ratio:.3f}x "
        f"(target <= {CLIENT_TARGET}x) {'PASS' if ok_client else 'FAIL'}"
    )
    print(
        f"daemon growth during the export, {last.reports:,} minus {base.reports:,}: "
        f"{extra:+.1f} MB (target <= {DAEMON_TARGET:.0f} MB) {'PASS' if ok_daemon else 'FAIL'}"
    )
    return 0 if ok_client and ok_daemon else 1


if __name__ == "__main__":
    sys.exit(main())
