"""Perturbation time by (true value, outcome): does the time tell a kept answer or the noise?"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

import numpy as np

from deniable.aggregator.central.curator import central_laplace_count
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    ItemRandomizedResponse,
    NumericMechanism,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
)
from deniable.shared.mechanisms._universal_hash import hash_unchecked
from deniable.shared.questions import numeric_mechanism

Outcome = Callable[[Any, Any], Hashable]
LO, HI = 0.0, 100.0


def kept(truth: Any, report: Any) -> Hashable:
    return "kept" if bool(np.all(np.asarray(report) == np.asarray(truth))) else "changed"


def olh_kept(olh: OptimizedLocalHashing) -> Outcome:
    def outcome(truth: Any, report: Any) -> Hashable:
        a, b, y = (np.asarray(column, dtype=np.uint64).reshape(1) for column in report)
        hashed = hash_unchecked(a, b, np.array([truth], dtype=np.uint64), olh.g)
        return "kept" if int(hashed[0]) == int(y[0]) else "changed"

    return outcome


def ones(truth: Any, report: Any) -> Hashable:
    return f"{int(np.count_nonzero(report))} set"


def flipped(k: int) -> Outcome:
    def outcome(truth: Any, report: Any) -> Hashable:
        bits = [(truth >> i) & 1 for i in range(k)]
        return f"{sum(int(r) != b for r, b in zip(np.ravel(report), bits, strict=True))} flipped"

    return outcome


def bucket(steps: int) -> str:
    """|noise| in grid steps, in the buckets 0–63, 64–511, 512–4095 and 4096 on."""
    edges = [(64, "|Z| < 64"), (512, "|Z| 64-511"), (4096, "|Z| 512-4095")]
    return next((name for edge, name in edges if steps < edge), "|Z| >= 4096")


def laplace_noise(mechanism: NumericMechanism, step: float) -> Outcome:
    """|report − truth| on the normalized scale, in grid steps."""

    def outcome(truth: Any, report: Any) -> Hashable:
        t = 2 * (truth - mechanism.lo) / (mechanism.hi - mechanism.lo) - 1
        return bucket(int(abs(float(np.ravel(report)[0]) - t) / step))

    return outcome


def side(mechanism: NumericMechanism, duchi_bound: float | None = None) -> Outcome:
    """Whether the report is on the truth's side (for truths at the range's ends).

    For Piecewise at t = ±1 that is the high-probability region; for Hybrid the part the
    report comes from (Duchi's reports are ±its bound) is named too.
    """

    def outcome(truth: Any, report: Any) -> Hashable:
        y = float(np.ravel(report)[0])
        where = (
            "truth's side"
            if (y > 0) == (truth > (mechanism.lo + mechanism.hi) / 2)
            else "other side"
        )
        if duchi_bound is None:
            return where
        return f"{'duchi' if abs(y) == duchi_bound else 'piecewise'} {where}"

    return outcome


def one_at_a_time(mechanism: NumericMechanism) -> Callable[[Any], Any]:
    """Perturb one true value, as the client does (``perturb_many`` of one answer)."""
    return lambda truth: mechanism.perturb_many([truth])


def subjects(epsilon: float) -> list[tuple[str, Callable[[Any], Any], list[Any], Outcome]]:
    """(name, perturb one truth with the OS CSPRNG, truths, outcome) per mechanism."""
    rr = RandomizedResponse.from_epsilon(epsilon)
    grr = GeneralizedRandomizedResponse.from_epsilon(8, 1.9)
    olh = OptimizedLocalHashing.from_epsilon(8, 1.9)
    oue = OptimizedUnaryEncoding.from_epsilon(8, epsilon)
    items = ItemRandomizedResponse.from_epsilon(4, epsilon)
    out: list[tuple[str, Callable[[Any], Any], list[Any], Outcome]] = [
        ("yes/no rr", lambda t: rr.perturb_many([t]), [False, True], kept),
        ("grr k=8 eps=1.9", lambda t: grr.perturb_many([t]), [0, 7], kept),
        ("olh k=8 eps=1.9", lambda t: olh.perturb_many([t]), [0, 7], olh_kept(olh)),
        ("oue k=8", lambda t: oue.perturb_many([t]), [0, 7], ones),
        ("multi-select k=4", lambda t: items.perturb_many([t]), [0, 15], flipped(4)),
    ]
    for kind in ("laplace", "duchi", "piecewise", "hybrid"):
        mechanism = numeric_mechanism(kind, LO, HI, epsilon)
        assert isinstance(mechanism, NumericMechanism)
        if kind == "laplace":
            outcome = laplace_noise(mechanism, float(getattr(mechanism, "grid_step", 1.0)))
        elif kind == "hybrid":
            outcome = side(mechanism, float(getattr(mechanism, "duchi").bound))  # noqa: B009
        else:
            outcome = side(mechanism)
        out.append((kind, one_at_a_time(mechanism), [LO, HI], outcome))

    def curator(true: Any) -> Any:
        return central_laplace_count(true, Fraction(1, 500), upper=10**9).released

    def curator_noise(true: Any, released: Any) -> Hashable:
        return bucket(abs(int(released) - int(true)))

    out.append(("curator count eps=0.002", curator, [10**6], curator_noise))
    return out


def measure(
    perturb: Callable[[Any], Any], truths: list[Any], outcome: Outcome, rounds: int, cap: float
) -> dict[tuple[Any, Hashable], list[float]]:
    """µs per call filed by (truth, outcome), the truths interleaved so that drift hits all."""
    samples: dict[tuple[Any, Hashable], list[float]] = defaultdict(list)
    deadline = time.perf_counter() + cap
    for _ in range(rounds):
        for truth in truths:
            start = time.perf_counter_ns()
            report = perturb(truth)
            elapsed = (time.perf_counter_ns() - start) / 1000
            samples[(truth, outcome(truth, report))].append(elapsed)
        if time.perf_counter() > deadline:
            break
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epsilon", type=float, default=1.0, help="ε (GRR/OLH: 1.9)")
    parser.add_argument("--rounds", type=int, default=3000, help="calls per true value (bound)")
    parser.add_argument("--max-seconds", type=float, default=8.0, help="time cap per mechanism")
    parser.add_argument("--min-calls", type=int, default=30, help="smallest group reported")
    parser.add_argument("--only", nargs="*", default=[], help="mechanisms whose name has these")
    args = parser.parse_args(argv)
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; epsilon {args.epsilon:g}, OS CSPRNG, one report per call; "
        f"median µs per (truth, outcome) group of at least {args.min_calls} calls"
    )
    for name, perturb, truths, outcome in subjects(args.epsilon):
        if args.only and not any(part in name for part in args.only):
            continue
        perturb(truths[0])  # warm caches (the discrete Laplace's thresholds)
        samples = measure(perturb, truths, outcome, args.rounds, args.max_seconds)
        medians = {
            key: (statistics.median(times), len(times))
            for key, times in sorted(samples.items(), key=lambda item: str(item[0]))
            if len(times) >= args.min_calls
        }
        spread = max(m for m, _ in medians.values()) / min(m for m, _ in medians.values())
        cells = ", ".join(f"{t!r}/{o}: {m:.1f} (n={n})" for (t, o), (m, n) in medians.items())
        print(f"{name:22s} max/min {spread:.3f}x  {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
