"""The curator's engine against DuckDB's own SQL on a 10⁷-row Parquet file, in the same run."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from deniable.aggregator.central import curator
from deniable.aggregator.central.curator import PrivacyUnit
from deniable.aggregator.central.curator.engine import open_engine, parse_condition, parse_key
from deniable.aggregator.central.curator.ledger import open_ledger
from deniable.aggregator.server.curator import CuratorClient, start_curator
from deniable.shared.wire.v1 import curator_pb2 as pb

PREDICATE = "age >= 30 AND dept IN ('hr', 'it') AND salary < 80000"
DEPTS = ("hr", "it", "ops", "sales", "legal", "rnd", "support", "finance")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the file")
    parser.add_argument("--units", type=int, default=2_000_000, help="distinct pid values")
    parser.add_argument("--dir", type=Path, default=None, help="cache directory for the file")
    parser.add_argument("--runs", type=int, default=5, help="runs of each query (median)")
    parser.add_argument("--max-contributions", type=int, default=3, help="K of the unit path")
    parser.add_argument("--privacy-unit", default="pid", help="the unit column")
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB memory limit")
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads")
    parser.add_argument("--budget", type=float, default=600.0, help="stop after this many s")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser.parse_args(argv)


def make_file(directory: Path, rows: int, units: int) -> Path:
    """The Parquet file (pid, age, dept, salary), reused when already in ``directory``."""
    path = directory / f"staff-{rows}-{units}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(36)
    writer = None
    chunk = 1_000_000
    try:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            table = pa.table(
                {
                    "pid": rng.integers(0, units, n),
                    "age": rng.integers(18, 80, n),
                    "dept": pa.array(np.array(DEPTS)[rng.integers(0, len(DEPTS), n)]),
                    "salary": rng.normal(60_000, 20_000, n).round(2),
                }
            )
            if writer is None:
                writer = pq.ParquetWriter(path.with_suffix(".tmp"), table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    path.with_suffix(".tmp").rename(path)
    return path


def median_seconds(run: Callable[[], object], runs: int, deadline: float) -> tuple[float, object]:
    """The median wall time of ``runs`` calls (fewer when past the deadline) and a result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return statistics.median(times), result


class _Daemon:
    """``curate serve`` in this process on 127.0.0.1:0, and an analyst's client of it."""

    def __init__(self, path: Path, args: argparse.Namespace, directory: Path) -> None:
        ledger_path = directory / f"bench-ledger-{os.getpid()}.db"
        ledger_path.unlink(missing_ok=True)
        self.ledger_path = ledger_path
        engine = open_engine(str(path), memory_limit=args.memory_limit, threads=args.threads)
        dataset = curator.Dataset("bench", engine, PrivacyUnit(), "add-remove")
        ledger = open_ledger(f"sqlite:///{ledger_path}")
        curator.register_dataset(ledger, dataset, 1000.0, None)
        token = ledger.issue_token("bench", "analyst", Fraction(1000), Fraction(0))
        self.running = start_curator(
            curator.CuratorService(dataset, ledger), "b" * 32, "127.0.0.1:0"
        )
        self.client = CuratorClient(self.running.address, token, timeout=600)

    def stop(self) -> None:
        self.client.close()
        self.running.stop(grace=1)
        self.ledger_path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    directory = args.dir or Path(tempfile.gettempdir()) / "deniable-bench"
    directory.mkdir(parents=True, exist_ok=True)
    path = make_file(directory, args.rows, args.units)
    deadline = time.perf_counter() + args.budget
    k, unit_column = args.max_contributions, args.privacy_unit
    source = f"read_parquet('{path}')"

    config: dict[str, str | bool | int | float | list[str]] = {"memory_limit": args.memory_limit}
    if args.threads:
        config["threads"] = args.threads
    # DuckDB's own SQL on one connection kept open, as the engine keeps its own: the
    # baseline pays no connection or first-read cost that the engine does not pay.
    connection = duckdb.connect(config=config)

    def own(sql: str) -> Callable[[], object]:
        def run() -> object:
            row = connection.execute(sql).fetchone()
            return None if row is None else row[0]

        return run

    engine = open_engine(
        str(path), memory_limit=args.memory_limit, threads=args.threads, temp_directory=None
    )
    where = parse_condition(PREDICATE, engine.columns)
    rows, unit = PrivacyUnit(), PrivacyUnit(unit_column, k)
    key = parse_key("dept", engine.columns)
    per_unit = (
        f"SELECT sum(least(n, {k})) FROM (SELECT count(*) AS n FROM {source} "
        f"WHERE {{}} GROUP BY {unit_column})"
    )
    # DuckDB's own bounded aggregate: its window over random() (not a CSPRNG), every row.
    window = (
        f"SELECT {{}} FROM (SELECT *, row_number() OVER (PARTITION BY {unit_column} "
        f"ORDER BY r) AS rn FROM (SELECT *, random() AS r FROM {source} WHERE {{}})) "
        f"WHERE rn <= {k}"
    )
    term = "CAST(least(greatest(floor(salary + 0.5), 0), 200000) AS BIGINT)"
    listed = ", ".join(f"'{d}'" for d in DEPTS)
    every = f"dept IN ({listed})"
    hist = "count(*) FROM (SELECT dept, count(*) FROM {} GROUP BY dept)"
    daemon = _Daemon(path, args, directory)
    count_request = pb.QueryRequest(
        options=pb.QueryOptions(epsilon=2**-20, where=PREDICATE), count=pb.CountQuery()
    )
    cases: list[tuple[str, dict[str, Callable[[], object]], Callable[[], object]]] = [
        (
            "count, rows as units",
            {"per-unit count": own(f"SELECT count(*) FROM {source} WHERE {PREDICATE}")},
            lambda: engine.count(where, rows),
        ),
        (
            "count over gRPC (daemon: token, ledger spend, noise)",
            {"per-unit count": own(f"SELECT count(*) FROM {source} WHERE {PREDICATE}")},
            lambda: daemon.client.query(count_request).released[0].value,
        ),
        (
            f"count, unit {unit_column} K={k}",
            {"per-unit count": own(per_unit.format(PREDICATE))},
            lambda: engine.count(where, unit),
        ),
        (
            f"sum salary, unit {unit_column} K={k}",
            {
                "per-unit count": own(per_unit.format(PREDICATE)),
                "window": own(window.format(f"sum({term})", PREDICATE)),
                "unbounded": own(f"SELECT sum({term}) FROM {source} WHERE {PREDICATE}"),
            },
            lambda: engine.sum("salary", Fraction(1), 0, 200_000, where, unit),
        ),
        (
            f"histogram dept (8 listed), unit {unit_column} K={k}",
            {
                "per-unit count": own(per_unit.format(every)),
                "window": own(
                    f"SELECT dept, count(*) FROM ({window.format('dept', every)}) GROUP BY dept"
                ),
                "unbounded": own(
                    f"SELECT {hist.format(f'(SELECT * FROM {source} WHERE {every})')}"
                ),
            },
            lambda: list(engine.histogram(key, None, unit, list(DEPTS))),
        ),
        (
            f"histogram dept (all keys), unit {unit_column} K={k}",
            {
                "per-unit count": own(per_unit.format("true")),
                "window": own(
                    f"SELECT dept, count(*) FROM ({window.format('dept', 'true')}) GROUP BY dept"
                ),
                "unbounded": own(f"SELECT dept, count(*) FROM {source} GROUP BY dept"),
            },
            lambda: list(engine.histogram(key, None, unit)),
        ),
    ]
    labels = ("per-unit count", "window", "unbounded")
    results = []
    print(f"{args.rows:,} rows, {args.units:,} units, {path}, memory limit {args.memory_limit}")
    print(f"predicate: {PREDICATE}")
    print(
        "baselines (DuckDB's own SQL): per-unit count = sum(least(n, K)) over GROUP BY unit "
        "(the least any bounding costs; with rows as units, DuckDB's own SELECT count(*) "
        "... WHERE of the same predicate; each on one DuckDB connection kept open); "
        "window = the same aggregate bounded by DuckDB's row_number() OVER (PARTITION BY "
        "unit ORDER BY random()); unbounded = the same aggregate without bounding"
    )
    print("| query | per-unit count (s) | window (s) | unbounded (s) | engine (s) | ratio |")
    print("|---|---|---|---|---|---|")
    for name, baselines, ours in cases:
        if time.perf_counter() > deadline:
            print(f"| {name} | (skipped: past --budget) | | | | |")
            continue
        base: dict[str, str] = {}
        base_s = {}
        for label, run in baselines.items():
            try:
                base_s[label], _ = median_seconds(run, args.runs, deadline)
                base[label] = f"{base_s[label]:.3f}"
            except duckdb.Error as error:
                base[label] = f"failed: {str(error).splitlines()[0][:40]}"
        shown = " | ".join(base.get(label, "") for label in labels)
        try:
            ours_s, ours_value = median_seconds(ours, args.runs, deadline)
        except duckdb.Error as error:  # past --memory-limit
            print(f"| {name} | {shown} | failed: {str(error).splitlines()[0]} | |")
            continue
        ratio = ours_s / base_s["per-unit count"] if "per-unit count" in base_s else math.nan
        print(f"| {name} | {shown} | {ours_s:.3f} | {ratio:.2f}× |")
        results.append(
            {
                "query": name,
                "baselines_s": base_s,
                "engine_s": ours_s,
                "ratio": ratio,
                "engine": str(ours_value)[:200],
            }
        )
    engine.close()
    daemon.stop()
    connection.close()
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": args.rows, "results": results}, indent=2))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
