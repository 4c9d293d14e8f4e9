"""Multiple choice: how often all k options are covered at once, per-option vs simultaneous.

For GRR and OUE over a grid of k, ε and n, draws ``--repeats`` surveys' support counts from
their exact distribution (true options Multinomial(n, f); GRR reports Multinomial(n, λ),
λ_v = q* + f_v(p* − q*); OUE counts Binomial(N_v, p*) + Binomial(n − N_v, q*)), and for
OLH perturbs every answer. The shares are Zipf-like with the last one 0. Prints, per
point, the lowest per-option coverage, how often the per-option intervals cover every
option at once (``joint``), how often the simultaneous ones do, and the mean width of the
simultaneous intervals over the per-option ones. Clopper–Pearson at 95%.

    python bench/simultaneous_coverage.py --repeats 2000 --seed 18
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from deniable.shared.mechanisms import FrequencyOracle, frequency_arrays
from deniable.shared.questions import categorical_mechanism


def shares(k: int) -> NDArray[np.float64]:
    """Zipf weights 1/(i+1) over the first k − 1 options, the last option 0."""
    weights = np.append(1.0 / np.arange(1, k), 0.0)
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def counts(
    spec: FrequencyOracle, f: NDArray[np.float64], n: int, repeats: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """``repeats`` surveys' support counts (rows)."""
    if spec.name == "grr":
        lam = spec.q_star + f * (spec.p_star - spec.q_star)
        return rng.multinomial(n, lam / lam.sum(), size=repeats)
    if spec.name == "oue":
        truth = rng.multinomial(n, f, size=repeats)
        return np.asarray(rng.binomial(truth, spec.p_star) + rng.binomial(n - truth, spec.q_star))
    rows = []
    for _ in range(repeats):
        reports = spec.perturb_many(rng.choice(spec.k, size=n, p=f), rng=rng)
        rows.append(spec.support_counts(reports))
    return np.stack(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--olh-repeats", type=int, default=300, help="OLH perturbs every answer")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        "| mechanism | k | ε | n | lowest per-option | joint (per-option) | simultaneous "
        "| width × |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    started = time.perf_counter()
    for name in ("grr", "oue", "olh"):
        for k in (3, 10, 30):
            for eps in (0.5, 1.0, 2.0, 4.0):
                for n in (100, 1000, 10_000):
                    if name == "olh" and n * args.olh_repeats > 3_000_000:
                        continue
                    spec = categorical_mechanism(name, k, eps)
                    f = shares(k)
                    repeats = args.olh_repeats if name == "olh" else args.repeats
                    c = counts(spec, f, n, repeats, rng)
                    got = {}
                    for simultaneous in (False, True):
                        arrays = frequency_arrays(
                            c, n, spec, 0.95, "clopper-pearson", "population",
                            simultaneous=simultaneous,
                        )  # fmt: skip
                        inside = (arrays["ci_low"] <= f) & (arrays["ci_high"] >= f)
                        width = float((arrays["ci_high"] - arrays["ci_low"]).mean())
                        got[simultaneous] = (inside, width)
                    per_option, width = got[False]
                    together, wide = got[True]
                    lowest = per_option.mean(axis=0).min()
                    joint, all_at_once = per_option.all(axis=1).mean(), together.all(axis=1).mean()
                    print(
                        f"| {name} | {k} | {eps:g} | {n:,} | {lowest:.3f} | {joint:.3f} "
                        f"| {all_at_once:.3f} | {wide / width:.2f} |"
                    )
    print(
        f"({time.perf_counter() - started:.0f} s; {args.repeats} repeats, OLH {args.olh_repeats})"
    )


if __name__ == "__main__":
    main()
