"""The figures of pg_ingest_limit.py: its configurations, runs, medians and paired ratios."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ingest_backends import percentile
from pg_cluster import Used

__all__ = ["BARE", "CONFIGS", "ONE", "PLAIN", "TWO", "Run", "report", "summarize"]

BARE, PLAIN = "bare ON CONFLICT, 1 conn", "bare plain INSERT, 1 conn"
ONE, TWO = "1 daemon", "2 daemons"
CONFIGS = (BARE, ONE, TWO, PLAIN)
DAEMON_TARGET, TWO_TARGET = 0.6, 1.0


@dataclass(frozen=True)
class Run:
    """One configuration's measurement in one round."""

    config: str
    round: int
    stored: int
    seconds: float
    latencies: tuple[float, ...]
    used: Used

    @property
    def rate(self) -> float:
        """Reports stored per second."""
        return self.stored / self.seconds


def summarize(runs: Sequence[Run], args: argparse.Namespace) -> dict[str, object]:
    """Medians with ranges, and the paired ratios of each round."""
    by = {
        config: sorted((r for r in runs if r.config == config), key=lambda r: r.round)
        for config in CONFIGS
    }
    ratio = [o.rate / b.rate for o, b in zip(by[ONE], by[BARE], strict=True)]
    plain = [o.rate / b.rate for o, b in zip(by[ONE], by[PLAIN], strict=True)]
    cpu = [b.used.cpu / o.used.cpu for o, b in zip(by[ONE], by[BARE], strict=True)]
    two = [t.rate / o.rate for t, o in zip(by[TWO], by[ONE], strict=True)]
    rates = {
        config: {
            "median": statistics.median(r.rate for r in mine),
            "min": min(r.rate for r in mine),
            "max": max(r.rate for r in mine),
            "p50_ms": 1e3 * percentile([x for r in mine for x in r.latencies], 0.50),
            "p99_ms": 1e3 * percentile([x for r in mine for x in r.latencies], 0.99),
            "transactions_per_batch": statistics.median(
                r.used.transactions / args.batches for r in mine
            ),
            **{
                f"{part}_cpu_ms_per_batch": statistics.median(
                    1e3 * getattr(r.used, part) / args.batches for r in mine
                )
                for part in ("server", "daemons", "client")
            },
        }
        for config, mine in by.items()
    }
    return {
        "reports_per_s": rates,
        "daemon_vs_bare": ratio,
        "daemon_vs_plain": plain,
        "bare_cpu_vs_daemon_cpu": cpu,
        "two_vs_one": two,
    }


def report(summary: dict[str, object], args: argparse.Namespace) -> None:
    """Print the summary with PASS or FAIL for each target, and write it as JSON if asked."""
    rates = summary["reports_per_s"]
    assert isinstance(rates, dict)
    print(
        f"\n{'configuration':26} reports/s, median (range) of {args.rounds}  p50 ms  p99 ms"
        "  CPU ms per batch: server daemons client  xacts/batch"
    )
    for config, row in rates.items():
        print(
            f"{config:26} {row['median']:9,.0f} ({row['min']:,.0f}-{row['max']:,.0f})"
            f"  {row['p50_ms']:6.1f}  {row['p99_ms']:6.1f}  {' ' * 17}"
            f"{row['server_cpu_ms_per_batch']:6.1f} {row['daemons_cpu_ms_per_batch']:7.1f} "
            f"{row['client_cpu_ms_per_batch']:6.1f}  {row['transactions_per_batch']:11.2f}"
        )
    for name, key, target in (
        ("1 daemon / bare ON CONFLICT", "daemon_vs_bare", DAEMON_TARGET),
        ("2 daemons / 1 daemon", "two_vs_one", TWO_TARGET),
        ("1 daemon / bare plain INSERT", "daemon_vs_plain", None),
        ("CPU per batch, bare ON CONFLICT / 1 daemon", "bare_cpu_vs_daemon_cpu", None),
    ):
        per_round = summary[key]
        assert isinstance(per_round, list)
        median = statistics.median(per_round)
        verdict = ""
        if target is not None:
            verdict = f" (target >= {target}): {'PASS' if median >= target else 'FAIL'}"
        print(
            f"{name}: per round {' '.join(f'{x:.2f}' for x in per_round)}; "
            f"median {median:.2f}x{verdict}"
        )
    if args.json:
        args.json.write_text(
            json.dumps(summary | {"args": vars(args) | {"json": str(args.json)}}, indent=2)
        )
