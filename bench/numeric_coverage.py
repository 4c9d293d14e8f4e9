"""Coverage of the numeric mean's intervals on a grid of ε, n and worst-case populations.

Duchi (and Hybrid at β = 0, which is Duchi) by summing the binomial pmf of the +B count
exactly; Piecewise, Hybrid and Laplace by seeded simulation of ``--repeats`` surveys per
point (fewer at large n, see ``repeats_at``), through :func:`estimate_mean` on exact
tallies. Reports are drawn with numpy from each mechanism's documented law (the exact
samplers of the package are ~50x slower); the law is cross-checked against the
mechanisms' exact E[y | t] and Var(y | t) before the grid runs.

Populations on [0, 1] (every mechanism is symmetric under x -> 1 - x, so one end is
enough): point masses at 0 and 0.5, and two-point 0/1 populations with P(1) = 1%, 5%, 50%.

    python bench/numeric_coverage.py                 # the table of docs/statistics.md
    python bench/numeric_coverage.py --t-only        # the t-interval's coverage (the rule)
    python bench/numeric_coverage.py --kinds laplace --epsilons 2 --sizes 100000 \
        --repeats 2000 --draws 2e8                   # one cell with more surveys
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from deniable.shared.mechanisms import MeanTally, NumericMechanism, estimate_mean
from deniable.shared.questions import numeric_mechanism

EPSILONS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
SIZES = (20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000)
POPULATIONS: dict[str, tuple[float, float]] = {
    # name: (x of the minority, its share); the rest at x = 0
    "point 0": (0.0, 0.0),
    "point 0.5": (0.5, 1.0),
    "1% at 1": (1.0, 0.01),
    "5% at 1": (1.0, 0.05),
    "50% at 1": (1.0, 0.5),
}
KINDS = ("duchi", "piecewise", "hybrid", "laplace")

Rng = np.random.Generator
Array = NDArray[np.float64]


def _round(position: Array, steps: int, rng: Rng) -> NDArray[np.int64]:
    """Stochastic rounding of position·steps (position in [0, 1]) onto {0, ..., steps}."""
    scaled = position * steps
    floor = np.floor(scaled)
    return (floor + (rng.random(scaled.shape) < scaled - floor)).astype(np.int64)


def _piecewise_units(spec: object, u: Array, rng: Rng) -> NDArray[np.int64]:
    """Piecewise reports in units of h: 2·cell + 1 − N (the law of PiecewiseMechanism)."""
    center, outer, cells = spec.center_cells, spec.outer_cells, spec.cells  # type: ignore[attr-defined]
    k = _round(u, outer, rng)
    high = rng.random(u.shape) < float(spec.p_center_exact)  # type: ignore[attr-defined]
    window = k + rng.integers(0, center, u.shape)
    low = rng.integers(0, outer, u.shape)
    cell = np.where(high, window, np.where(low < k, low, low + center))
    return np.asarray(2 * cell + 1 - cells, dtype=np.int64)


def _duchi_ups(bound: float, u: Array, rng: Rng) -> NDArray[np.bool_]:
    return np.asarray(rng.random(u.shape) < 0.5 + (2 * u - 1) / (2 * bound))


def sums(spec: NumericMechanism, u: Array, rng: Rng) -> tuple[list[int], list[int]]:
    """Exact Σz and Σz² (z = y·2^unit_bits) per row of true positions ``u`` (rows = surveys)."""
    name, bits = spec.name, spec.unit_bits
    if name == "piecewise":
        z = _piecewise_units(spec, u, rng)
        scale = 1 << (bits - spec.grid_bits)  # type: ignore[attr-defined]
        return _exact(z, scale)
    if name == "laplace":
        m = spec.grid_bits  # type: ignore[attr-defined]
        q = math.exp(-math.ldexp(spec.epsilon, -m))
        noise = rng.geometric(1 - q, u.shape) - rng.geometric(1 - q, u.shape)
        z = _round(u, 1 << m, rng) + noise - (1 << (m - 1))  # y = z·2^-(m-1)
        return _exact(z.astype(np.int64), 1)
    if name == "duchi":
        ups = _duchi_ups(spec.bound, u, rng)  # type: ignore[attr-defined]
        b = int(Fraction(spec.bound) * (1 << bits))  # type: ignore[attr-defined]
        return _two_point(ups, b)
    if name == "hybrid":
        pm, duchi = spec.piecewise, spec.duchi  # type: ignore[attr-defined]
        use = rng.random(u.shape) < spec.beta  # type: ignore[attr-defined]
        zp = np.where(use, _piecewise_units(pm, u, rng), 0)
        ups = _duchi_ups(duchi.bound, u, rng) & ~use
        downs = ~use & ~ups
        scale = 1 << (bits - pm.grid_bits)
        b = int(Fraction(duchi.bound) * (1 << bits))
        total, squares = _exact(zp, scale)
        up, down = ups.sum(axis=1).tolist(), downs.sum(axis=1).tolist()
        return (
            [t + (a - d) * b for t, a, d in zip(total, up, down, strict=True)],
            [s + (a + d) * b * b for s, a, d in zip(squares, up, down, strict=True)],
        )
    raise ValueError(f"no sampler for {name!r}")


def _exact(z: NDArray[np.int64], scale: int) -> tuple[list[int], list[int]]:
    """Σz and Σz² per row exactly: z = a·2^16 + b, each partial sum fits in int64."""
    total = z.sum(axis=1).tolist()
    a, b = z >> 16, z & 0xFFFF
    parts = [(a * a).sum(axis=1).tolist(), (a * b).sum(axis=1).tolist(), (b * b).sum(axis=1)]
    squares = [(aa << 32) + (ab << 17) + int(bb) for aa, ab, bb in zip(*parts, strict=True)]
    return [t * scale for t in total], [s * scale * scale for s in squares]


def _two_point(ups: NDArray[np.bool_], b: int) -> tuple[list[int], list[int]]:
    n = ups.shape[1]
    counts = ups.sum(axis=1).tolist()
    return [(2 * c - n) * b for c in counts], [n * b * b for _ in counts]


def positions(name: str, n: int, repeats: int, rng: Rng) -> Array:
    """True positions u = x on [0, 1] of ``repeats`` surveys of n participants."""
    where, share = POPULATIONS[name]
    minority = rng.random((repeats, n)) < share
    return np.where(minority, where, 0.0)


def true_mean(name: str) -> float:
    where, share = POPULATIONS[name]
    return where * share


def repeats_at(n: int, repeats: int, draws: int) -> int:
    """Fewer repeats at large n (the sampling cost is n·R <= draws): at least 200."""
    return max(200, min(repeats, draws // n))


def chunked(
    measure: Callable[..., object], spec: NumericMechanism, n: int, population: str,
    repeats: int, rng: Rng,
) -> tuple[float, set[str]]:  # fmt: skip
    """``measure`` over ``repeats`` surveys, at most 4·10⁶ reports in memory at once."""
    per = max(1, min(repeats, 4_000_000 // n))
    covered, methods, done = 0.0, set(), 0
    while done < repeats:
        size = min(per, repeats - done)
        got = measure(spec, n, population, size, rng)
        value, used = got if isinstance(got, tuple) else (got, set())
        covered, done = covered + value * size, done + size
        methods |= used
    return covered / repeats, methods


def check_law(spec: NumericMechanism, rng: Rng) -> None:
    """The numpy law's mean and variance match the mechanism's exact ones (4 SE)."""
    for x in (0.0, 0.3, 1.0):
        draws = 200_000
        total, _ = sums(spec, np.full((draws, 1), x), rng)
        y = np.ldexp(np.array(total, dtype=np.float64), -spec.unit_bits)
        t = 2 * x - 1
        se = math.sqrt(spec.variance(t) / draws)
        if abs(y.mean() - t) > 5 * se or abs(y.var() / spec.variance(t) - 1) > 0.05:
            sys.exit(f"{spec.name} law off at x={x}: mean {y.mean()}, var {y.var()}")


def t_coverage(spec: NumericMechanism, n: int, population: str, repeats: int, rng: Rng) -> float:
    """Coverage of the plain t-interval (the rule's input)."""
    u = positions(population, n, repeats, rng)
    total, squares = sums(spec, u, rng)
    scale = 2.0**-spec.unit_bits
    mean = np.array([float(Fraction(t, n)) for t in total]) * scale
    var = (
        np.array(
            [
                float(Fraction(n * s - t * t, n * (n - 1)))
                for t, s in zip(total, squares, strict=True)
            ]
        )
        * scale
        * scale
    )
    half = stats.t.isf(0.025, n - 1) * np.sqrt(var / n)
    truth = 2 * true_mean(population) - 1
    return float(np.mean((mean - half <= truth) & (truth <= mean + half) & (half > 0)))


def method_coverage(
    spec: NumericMechanism, n: int, population: str, repeats: int, rng: Rng
) -> tuple[float, set[str]]:
    """Coverage of the interval estimate_mean builds, and the methods it used."""
    if spec.name == "duchi" or (spec.name == "hybrid" and spec.beta == 0):  # type: ignore[attr-defined]
        return exact_two_point(spec, n, population), {"clopper-pearson"}
    u = positions(population, n, repeats, rng)
    total, squares = sums(spec, u, rng)
    truth = true_mean(population)
    covered, methods = 0, set()
    for t, s in zip(total, squares, strict=True):
        est = estimate_mean(spec, MeanTally(spec.unit_bits, n, t, s))
        covered += est.ci_low <= truth <= est.ci_high
        methods.add(est.method)
    return covered / repeats, methods


def exact_two_point(spec: NumericMechanism, n: int, population: str) -> float:
    """Exact coverage when every report is ±B: sum the Binomial pmf of the +B count."""
    bound = spec.bound  # type: ignore[attr-defined]
    b = Fraction(bound) * (1 << spec.unit_bits)
    truth = true_mean(population)
    counts = np.arange(n + 1)
    share = 0.5 + (2 * truth - 1) / (2 * bound)
    pmf = stats.binom.pmf(counts, n, share)
    covered = 0.0
    for c in range(n + 1):
        if pmf[c] < 1e-15:
            continue
        z = int((2 * c - n) * b)
        est = estimate_mean(spec, MeanTally(spec.unit_bits, n, z, n * int(b * b)))
        if est.ci_low <= truth <= est.ci_high:
            covered += float(pmf[c])
    return covered


def run(
    kinds: tuple[str, ...], epsilons: tuple[float, ...], sizes: tuple[int, ...],
    repeats: int, draws: int, seed: int, measure: Callable[..., object], label: str,
) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    print(f"# {label}; populations: {', '.join(POPULATIONS)}")
    print("mechanism  epsilon  " + "".join(f"{n:>9}" for n in sizes))
    for kind in kinds:
        for epsilon in epsilons:
            spec = numeric_mechanism(kind, 0.0, 1.0, epsilon)
            if kind != "duchi":
                check_law(spec, rng)
            cells = []
            for n in sizes:
                worst, methods = 1.0, set()
                for population in POPULATIONS:
                    if measure is method_coverage and (
                        spec.name == "duchi" or getattr(spec, "beta", None) == 0
                    ):  # exact: no repeats
                        value, used = method_coverage(spec, n, population, 1, rng)
                    else:
                        runs = repeats_at(n, repeats, draws)
                        value, used = chunked(measure, spec, n, population, runs, rng)
                    worst = min(worst, value)
                    methods |= used
                mark = "".join(sorted(m[0] for m in methods))
                cells.append(f"{worst:>7.3f}{mark:<2}")
            print(f"{kind:<10} {epsilon:>6g}  " + "".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--t-only", action="store_true", help="plain t-interval coverage")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument(
        "--draws", type=float, default=4e6,
        help="at most this many reports per cell and population (fewer repeats at large n)",
    )  # fmt: skip
    args = parser.parse_args()
    kinds = tuple(args.kinds.split(","))
    sizes = tuple(int(s) for s in args.sizes.split(","))
    epsilons = tuple(float(e) for e in args.epsilons.split(","))
    grid = (kinds, epsilons, sizes, args.repeats, int(args.draws), args.seed)
    if args.t_only:
        run(*grid, t_coverage, "t-interval, min coverage")
    else:
        label = "min coverage of the interval used (b bernstein, c clopper-pearson/chernoff, t t)"
        run(*grid, method_coverage, label)


if __name__ == "__main__":
    main()
