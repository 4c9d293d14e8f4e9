"""Yes/no perturbation throughput: exact CSPRNG randomized response against numpy PCG64."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deniable.client import RandomizedResponse

BASELINE = "pcg64 float (baseline)"
PRODUCT = "exact, os.urandom (default)"
TARGET_RATIO = 0.5
TARGET_RATE = 10_000_000.0


@dataclass(frozen=True)
class Variant:
    """One way of producing n reports (or, for context, n random bytes)."""

    name: str
    run: Callable[[], object]


def make_variants(bits: NDArray[np.bool_], alpha: float, seed: int) -> list[Variant]:
    """The four measured variants, each a zero-argument callable over the same input."""
    n = bits.size
    rr = RandomizedResponse(alpha=alpha)
    p_truth = (1.0 + alpha) / 2.0
    baseline_rng = np.random.default_rng(seed)
    exact_rng = np.random.default_rng(seed + 1)

    def baseline() -> NDArray[np.bool_]:
        result: NDArray[np.bool_] = bits == (baseline_rng.random(n) < p_truth)
        return result

    def product() -> NDArray[np.bool_]:
        return rr.perturb_many(bits)

    def exact_pcg64() -> NDArray[np.bool_]:
        return rr.perturb_many(bits, rng=exact_rng)

    def urandom_only() -> bytes:
        return os.urandom(n)

    return [
        Variant(BASELINE, baseline),
        Variant(PRODUCT, product),
        Variant("exact, pcg64 bytes", exact_pcg64),
        Variant("os.urandom(n) only", urandom_only),
    ]


def measure(variants: Sequence[Variant], repeats: int) -> dict[str, list[float]]:
    """Time every variant once per repeat, round-robin, rotating which goes first."""
    for variant in variants:  # warm-up: page faults, digit cache, first-call overheads
        variant.run()
    seconds: dict[str, list[float]] = {v.name: [] for v in variants}
    for repeat in range(repeats):
        start = repeat % len(variants)
        for variant in [*variants[start:], *variants[:start]]:
            t0 = time.perf_counter()
            result = variant.run()
            elapsed = time.perf_counter() - t0
            del result
            seconds[variant.name].append(elapsed)
    return seconds


def agreement(variant: Variant, bits: NDArray[np.bool_]) -> float | None:
    """Fraction of reports equal to the true answer (should be near (1+α)/2), or None."""
    reports = variant.run()
    if not isinstance(reports, np.ndarray):
        return None
    return float(np.mean(reports == bits))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000, help="reports per call")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per variant")
    parser.add_argument("--alpha", type=float, default=0.5, help="randomized response α")
    parser.add_argument("--seed", type=int, default=20261121, help="seed for input and PCG64")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    n: int = args.n
    repeats: int = args.repeats
    alpha: float = args.alpha
    bits: NDArray[np.bool_] = np.random.default_rng(args.seed).random(n) < 0.3
    variants = make_variants(bits, alpha, args.seed)

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs"
    )
    print(f"n={n:,} reports per call, alpha={alpha}, p_truth={(1 + alpha) / 2}, repeats={repeats}")
    seconds = measure(variants, repeats)

    rates = {name: [n / s for s in times] for name, times in seconds.items()}
    medians = {name: statistics.median(r) for name, r in rates.items()}
    base = medians[BASELINE]
    width = max(len(v.name) for v in variants)
    print()
    print(f"{'variant':<{width}}  {'median rep/s':>14}  {'best rep/s':>14}  {'vs PCG64':>8}  agree")
    for variant in variants:
        name = variant.name
        agree = agreement(variant, bits)
        agree_text = "-" if agree is None else f"{agree:.4f}"
        print(
            f"{name:<{width}}  {medians[name]:>14,.0f}  {max(rates[name]):>14,.0f}"
            f"  {medians[name] / base:>7.2f}x  {agree_text}"
        )
    print()
    ratio = medians[PRODUCT] / base
    print(
        f"target ratio >= {TARGET_RATIO}x PCG64: {'PASS' if ratio >= TARGET_RATIO else 'FAIL'}"
        f" ({ratio:.2f})"
    )
    print(
        f"target >= {TARGET_RATE / 1e6:.0f}M reports/s: "
        f"{'PASS' if medians[PRODUCT] >= TARGET_RATE else 'FAIL'}"
        f" ({medians[PRODUCT] / 1e6:.1f}M)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
