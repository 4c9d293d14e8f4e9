"""Numeric perturbation time against the true value: what remains of the timing channel."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from deniable.shared.mechanisms import NumericMechanism
from deniable.shared.questions import numeric_mechanism

KINDS = ("laplace", "duchi", "piecewise", "hybrid")
LO, HI = 0.0, 100.0
VALUES = {  # the ends, grid points, values with long binary expansions, a subnormal
    "min": LO,
    "max": HI,
    "mid": 50.0,
    "12.3": 12.3,
    "100/3": 100 / 3,
    "99.9": 99.9,
    "5e-324": 5e-324,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epsilon", type=float, default=1.0, help="every mechanism's ε")
    parser.add_argument("--rounds", type=int, default=2000, help="reports per value (bound)")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="time cap per mechanism")
    parser.add_argument("--batch", type=int, default=1, help="true values per perturb_many call")
    return parser.parse_args(argv)


def measure(mechanism: NumericMechanism, rounds: int, cap: float, batch: int) -> dict[str, float]:
    """Median µs per call for each value, the values interleaved so that drift hits all."""
    samples: dict[str, list[float]] = {name: [] for name in VALUES}
    batches = {name: [value] * batch for name, value in VALUES.items()}
    deadline = time.perf_counter() + cap
    for _ in range(rounds):
        for name, truths in batches.items():
            start = time.perf_counter_ns()
            mechanism.perturb_many(truths)  # the OS CSPRNG, as participants use it
            samples[name].append((time.perf_counter_ns() - start) / 1000)
        if time.perf_counter() > deadline:
            break
    return {name: statistics.median(times) for name, times in samples.items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; range [{LO:g}, {HI:g}], epsilon {args.epsilon:g}, "
        f"batch {args.batch}, median µs per call over up to {args.rounds} interleaved calls"
    )
    print(f"{'mechanism':10s}" + "".join(f"{name:>9s}" for name in VALUES) + "   max/min")
    for kind in KINDS:
        mechanism = numeric_mechanism(kind, LO, HI, args.epsilon)
        assert isinstance(mechanism, NumericMechanism)
        medians = measure(mechanism, args.rounds, args.max_seconds, args.batch)
        spread = max(medians.values()) / min(medians.values())
        cells = "".join(f"{medians[name]:9.1f}" for name in VALUES)
        print(f"{kind:10s}{cells}   {spread:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
