"""Per-mechanism throughput: client perturbation and server aggregation of 10^6 reports."""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.analysis._questions import estimate, group_tally
from deniable.aggregator.server._service import MAX_BATCH
from deniable.aggregator.storage import Tally
from deniable.aggregator.storage._decode import Group
from deniable.client._categorical import categorical_mechanism
from deniable.client._numeric import perturb_numeric
from deniable.client._rr import RandomizedResponse
from deniable.client._values import report_values
from deniable.shared._categorical import OueSpec, categorical_spec
from deniable.shared._frequency_oracle import CategoricalSpec
from deniable.shared._numeric import numeric_spec
from deniable.shared._rr import RandomizedResponseSpec
from deniable.shared._wire import Spec, mechanism_message
from deniable.shared.wire.v1 import aggregator_pb2 as pb

PERTURB_BASELINE = "pcg64 rng.random(n) (baseline)"
AGGREGATE_BASELINE = "np.bincount(options) (baseline)"
TARGET_NAME = "olh k=64"
TARGET_SECONDS = 2.0
TARGET_REPORTS = 1_000_000
LO, HI = 0.0, 100.0
METHOD = "clopper-pearson"  # the server's default interval


@dataclass(frozen=True)
class Variant:
    """One measured callable; ``run`` handles ``reports`` reports once."""

    name: str
    run: Callable[[], object]
    reports: int


@dataclass(frozen=True)
class Mechanism:
    """A shipped mechanism with its parameters and n true answers."""

    name: str
    spec: Spec
    truths: NDArray[Any]


def make_mechanisms(n: int, ks: Sequence[int], epsilon: float, seed: int) -> list[Mechanism]:
    """Every shipped mechanism at ``epsilon``: yes/no, GRR/OUE/OLH per k, four numeric ones."""
    rng = np.random.default_rng(seed)
    bits = rng.random(n) < 0.3
    values = rng.uniform(LO, HI, n)
    mechanisms = [Mechanism("yes/no rr", RandomizedResponseSpec.from_epsilon(epsilon), bits)]
    for kind in ("grr", "oue", "olh"):
        for k in ks:
            options = rng.integers(0, k, n)
            spec = categorical_spec(kind, k, epsilon=epsilon)
            mechanisms.append(Mechanism(f"{kind} k={k}", spec, options))
    for kind in ("laplace", "duchi", "piecewise", "hybrid"):
        mechanisms.append(Mechanism(kind, numeric_spec(kind, LO, HI, epsilon), values))
    return mechanisms


def client_perturb(spec: Spec, truths: NDArray[Any]) -> Any:
    """What ``client._values.perturbed_values`` runs before ``report_values`` (OS CSPRNG)."""
    if isinstance(spec, RandomizedResponseSpec):
        return RandomizedResponse(spec.alpha).perturb_many(truths)
    if isinstance(spec, CategoricalSpec):
        return categorical_mechanism(spec).perturb_many(truths)
    return perturb_numeric(spec, truths)


def perturb_variants(
    mechanisms: Sequence[Mechanism], n: int, numeric_n: int, seed: int
) -> list[Variant]:
    """The PCG64 baseline and each mechanism's client path, over the first n answers.

    Numeric mechanisms get the first ``numeric_n`` answers (their exact sampling loops over
    Python integers, about 2-4 µs per report, so 10^6 reports take seconds per call).
    """
    rng = np.random.default_rng(seed)
    variants = [Variant(PERTURB_BASELINE, lambda: rng.random(n), n)]
    for m in mechanisms:
        numeric = not isinstance(m.spec, RandomizedResponseSpec | CategoricalSpec)
        truths = m.truths[: min(n, numeric_n) if numeric else n]
        run = functools.partial(client_perturb, m.spec, truths)
        variants.append(Variant(m.name, run, len(truths)))
    return variants


def wire_columns(spec: Spec, reports: Any) -> Any:
    """Reports in the column form the server's decoder gives a group (see ``Group.values``)."""
    if isinstance(spec, RandomizedResponseSpec):
        return np.asarray(reports, dtype=np.uint8)
    if isinstance(spec, OueSpec):
        packed = np.packbits(np.asarray(reports), axis=1, bitorder="little")
        return [row.tobytes() for row in packed]
    if isinstance(spec, CategoricalSpec) and isinstance(reports, tuple):  # OLH (a, b, y)
        return np.stack([np.asarray(c, dtype=np.uint64) for c in reports], axis=1)
    if isinstance(spec, CategoricalSpec):
        return np.asarray(reports, dtype=np.int64)
    return np.asarray(reports, dtype=np.float64).tolist()


def make_groups(spec: Spec, reports: Any, batch: int) -> list[Group]:
    """The reports as decoded batches of ``batch`` reports, built before timing."""
    head = type(reports)(*(c[:1] for c in reports)) if isinstance(reports, tuple) else reports[:1]
    first = report_values(spec, head)[0]  # OLH reports are a tuple (a, b, y) of arrays
    template = pb.Report(survey_id="s", question_id="q", mechanism=mechanism_message(spec), **first)
    columns = wire_columns(spec, reports)
    return [
        Group(template, 0, np.arange(len(part)), part)
        for part in (columns[start : start + batch] for start in range(0, len(columns), batch))
    ]


def server_tally(spec: Spec, groups: Sequence[Group]) -> Tally:
    """Per batch: check the values and add the group's contribution, as storage does."""
    n, sums = 0, list[int]()
    for group in groups:
        delta = group_tally(spec, group, range(len(group.rows)))(slice(None))
        sums = [a + b for a, b in zip_longest(sums, delta, fillvalue=0)]
        n += len(group.rows)
    return Tally(n, tuple(sums))


def question_for(spec: Spec) -> pb.Question:
    question = pb.Question(id="q", text="?", mechanism=mechanism_message(spec))
    if isinstance(spec, CategoricalSpec):
        question.categorical.options.extend(f"option {i}" for i in range(spec.k))
    return question


def aggregate_variants(
    mechanisms: Sequence[Mechanism], reports: dict[str, Any], n: int, batch: int, seed: int
) -> list[Variant]:
    """Per mechanism, tallying n reports batch by batch, then one estimate from the tally."""
    options = np.random.default_rng(seed).integers(0, 64, n)
    variants = [Variant(AGGREGATE_BASELINE, lambda: np.bincount(options, minlength=64), n)]
    for m in mechanisms:
        got = reports[m.name]
        if not isinstance(got, tuple) and len(got) < n:  # numeric: repeat the reports up to n
            got = np.resize(got, n)
        groups = make_groups(m.spec, got, batch)
        tally, question = server_tally(m.spec, groups), question_for(m.spec)
        run_estimate = functools.partial(estimate, question, m.spec, tally, 0.95, METHOD)
        run_tally = functools.partial(server_tally, m.spec, groups)
        variants.append(Variant(f"{m.name}: tally", run_tally, n))
        variants.append(Variant(f"{m.name}: estimate", run_estimate, n))
    return variants


def measure(
    variants: Sequence[Variant], repeats: int, budget: float
) -> tuple[dict[str, list[float]], dict[str, object]]:
    """Round-robin, rotating which variant goes first; stop early after ``budget`` seconds.

    One untimed call per variant first (page faults, digit caches, the scipy import).
    Returns each variant's seconds per repeat and its last result.
    """
    deadline = time.perf_counter() + budget
    results: dict[str, object] = {v.name: v.run() for v in variants}
    seconds: dict[str, list[float]] = {v.name: [] for v in variants}
    for repeat in range(repeats):
        start = repeat % len(variants)
        for variant in [*variants[start:], *variants[:start]]:
            t0 = time.perf_counter()
            results[variant.name] = variant.run()
            seconds[variant.name].append(time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            break
    return seconds, results


def ratio_text(ratio: float) -> str:
    """A throughput ratio: two decimals, or two significant digits below 0.1."""
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def print_perturbation(variants: Sequence[Variant], seconds: dict[str, list[float]]) -> None:
    base = variants[0].reports / statistics.median(seconds[PERTURB_BASELINE])
    width = max(len(v.name) for v in variants)
    print(f"{'mechanism':<{width}}  {'n':>9}  {'median rep/s':>13}  {'min–max rep/s':<25}", end="")
    print("  vs pcg64")
    for v in variants:
        times, n = seconds[v.name], v.reports
        spread, rate = f"{n / max(times):,.0f}–{n / min(times):,.0f}", n / statistics.median(times)
        print(f"{v.name:<{width}}  {n:>9,}  {rate:>13,.0f}  {spread:<25}", end="")
        print(f"  {ratio_text(rate / base):>8}")


def print_aggregation(names: Sequence[str], seconds: dict[str, list[float]], n: int) -> float:
    """The aggregation table; returns the target mechanism's median seconds (NaN if absent)."""
    base = statistics.median(seconds[AGGREGATE_BASELINE])
    width = max(map(len, names))
    print(
        f"{'mechanism':<{width}}  {'tally ms':>9}  {'min–max ms':<15}  {'estimate ms':>11}"
        f"  {'total rep/s':>13}  vs bincount"
    )
    target = math.nan
    for name in names:
        tally = seconds.get(f"{name}: tally", seconds.get(name, []))
        est = seconds.get(f"{name}: estimate", [0.0])
        total = statistics.median(tally) + statistics.median(est)
        target = total if name == TARGET_NAME else target
        spread = f"{min(tally) * 1e3:.1f}–{max(tally) * 1e3:.1f}"
        est_text = f"{statistics.median(est) * 1e3:.2f}" if name != AGGREGATE_BASELINE else "-"
        print(
            f"{name:<{width}}  {statistics.median(tally) * 1e3:>9.1f}  {spread:<15}  "
            f"{est_text:>11}  {n / total:>13,.0f}  {ratio_text(base / total):>10}"
        )
    return target


def print_target(seconds: float, n: int) -> None:
    """PASS/FAIL for OLH k=64 against the issue's target, scaled to 10^6 reports."""
    if math.isnan(seconds):
        print(f"target: {TARGET_NAME} not measured (add 64 to --k)")
        return
    scaled = seconds * TARGET_REPORTS / n
    note = "" if n == TARGET_REPORTS else f", scaled from {seconds:.3f} s for n={n:,}"
    print(
        f"target: {TARGET_NAME} aggregation of {TARGET_REPORTS:,} reports < {TARGET_SECONDS:g} s:"
        f" {'PASS' if scaled < TARGET_SECONDS else 'FAIL'} ({scaled:.3f} s{note})"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="reports per mechanism")
    parser.add_argument(
        "--numeric-n", type=int, default=200_000, help="answers per numeric perturbation call"
    )
    parser.add_argument("--k", type=int, nargs="+", default=[8, 64], help="options (GRR/OUE/OLH)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="ε of every mechanism")
    parser.add_argument("--batch", type=int, default=1000, help="reports per server batch")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds per phase, at most")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per phase, then stop")
    parser.add_argument("--seed", type=int, default=20261121, help="seed for inputs and PCG64")
    args = parser.parse_args(argv)
    for name in ("n", "numeric_n", "batch", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if any(not 2 <= k <= 1024 for k in args.k):
        parser.error("--k values must be in 2..1024")
    if args.batch > MAX_BATCH:
        parser.error(f"--batch must be at most {MAX_BATCH:,} (the server's limit)")
    args.k = sorted(set(args.k))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    n: int = args.n
    t_start = time.perf_counter()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"n={n:,} reports per mechanism (numeric perturbation: {min(n, args.numeric_n):,}), "
        f"k={args.k}, epsilon={args.epsilon}, "
        f"server batch={args.batch:,}, repeats={args.repeats}, budget={args.budget:g} s per phase"
    )
    mechanisms = make_mechanisms(n, args.k, args.epsilon, args.seed)
    names = [PERTURB_BASELINE, *(m.name for m in mechanisms)]
    variants = perturb_variants(mechanisms, n, args.numeric_n, args.seed)
    seconds, reports = measure(variants, args.repeats, args.budget)
    print(f"\nperturbation, client path, OS CSPRNG ({len(seconds[PERTURB_BASELINE])} rounds)")
    print_perturbation(variants, seconds)

    variants = aggregate_variants(mechanisms, reports, n, args.batch, args.seed)
    seconds, _ = measure(variants, args.repeats, args.budget)
    print(f"\naggregation, server path ({len(seconds[AGGREGATE_BASELINE])} rounds)")
    target = print_aggregation([AGGREGATE_BASELINE, *names[1:]], seconds, n)
    print()
    print_target(target, n)
    print(f"whole run: {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
