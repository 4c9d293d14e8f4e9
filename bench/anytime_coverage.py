"""How often intervals miss when a live survey is looked at repeatedly, and what --anytime costs.

Prints two tables and writes a plot (needs the ``plot`` extra: pip install 'deniable[plot]'):

1. P(the interval has missed the truth at some look so far), looking after every 100
   reports up to n = 10^4: exact for the yes/no share (a forward recursion over the
   binomial count), seeded simulation for a numeric mean (Laplace and Piecewise).
2. The width of the anytime interval over the fixed-n one at n = 1000 and 10^4.

    .venv/bin/python bench/anytime_coverage.py [--plot docs/anytime_coverage.svg]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from deniable.shared.mechanisms import (
    DuchiMechanism,
    GeneralizedRandomizedResponse,
    LaplaceMechanism,
    NumericMechanism,
    PiecewiseMechanism,
    RandomizedResponse,
)
from deniable.shared.mechanisms._base import Estimate, Tally
from deniable.shared.stats import anytime_rate_interval, binomial_interval
from deniable.shared.wire.v1 import aggregator_pb2 as pb

STEP, LOOKS = 100, 100
LOOKED = STEP * np.arange(1, LOOKS + 1)
Interval = Callable[[NDArray[np.float64], int], tuple[NDArray[np.float64], NDArray[np.float64]]]


def exact_missed_by(rate: float, interval: Interval) -> NDArray[np.float64]:
    """P(missed at some look up to each look), Bernoulli(rate) reports, exactly."""
    step_pmf = stats.binom.pmf(np.arange(STEP + 1), STEP, rate)
    alive, offset, missed = np.array([1.0]), 0, np.empty(LOOKS)
    for look in range(LOOKS):
        alive = np.convolve(alive, step_pmf)
        kept = np.flatnonzero(alive > 1e-15)
        alive, offset = alive[kept[0] : kept[-1] + 1], offset + int(kept[0])
        low, high = interval(offset + np.arange(alive.size, dtype=np.float64), int(LOOKED[look]))
        alive = np.where((low <= rate) & (rate <= high), alive, 0.0)
        missed[look] = 1.0 - alive.sum()
    return missed


def simulated_missed_by(
    spec: NumericMechanism, runs: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Share of runs missed by each look: (anytime, t-interval), values uniform on the range."""
    rng = np.random.default_rng(seed)
    pool = spec.perturb_many(rng.uniform(spec.lo, spec.hi, 200_000), rng)
    truth = float(np.mean(pool))  # resampling the pool: i.i.d. draws with this mean
    total, squares = np.zeros(runs), np.zeros(runs)
    anytime, fixed = np.zeros(runs, bool), np.zeros(runs, bool)
    out = np.empty((2, LOOKS))
    for look, n in enumerate(LOOKED):
        y = pool[rng.integers(0, pool.size, (runs, STEP))]
        total += y.sum(axis=1)
        squares += (y * y).sum(axis=1)
        mean = total / n
        low, high = spec.anytime_mean_interval(int(n), mean, 0.95)
        anytime |= (low > truth) | (high < truth)
        half = stats.t.isf(0.025, n - 1) * np.sqrt((squares - total * mean) / (n - 1) / n)
        fixed |= np.abs(mean - truth) > half
        out[:, look] = anytime.mean(), fixed.mean()
    return out[0], out[1]


def width_ratios() -> list[tuple[str, float, float]]:
    """Anytime width over fixed-n width at n = 1000 and 10^4, at the expected counts or reports."""
    rng = np.random.default_rng(11)
    rr = RandomizedResponse(0.5)
    grr = GeneralizedRandomizedResponse.from_epsilon(4, 1.0)
    shares = np.array([0.4, 0.3, 0.2, 0.1])

    def yes_no(n: int) -> tuple[Estimate, Estimate]:
        tally = Tally(n, (round(n * rr.report_probability(0.3)),))
        return rr.estimate(tally), rr.estimate(tally, anytime=True)

    def categorical(n: int) -> tuple[Estimate, Estimate]:
        rates = grr.q_star + shares * (grr.p_star - grr.q_star)
        counts = np.round(n * rates).astype(int)
        counts[0] += n - counts.sum()
        tally = Tally(n, tuple(counts.tolist()))
        return grr.estimate(tally), grr.estimate(tally, anytime=True)

    def numeric(spec: NumericMechanism) -> Callable[[int], tuple[Estimate, Estimate]]:
        def run(n: int) -> tuple[Estimate, Estimate]:
            tally = Tally(n, tuple(spec.tally(spec.perturb_many(rng.uniform(0, 1, n), rng))))
            return spec.estimate(tally), spec.estimate(tally, anytime=True)

        return run

    cases: list[tuple[str, Callable[[int], tuple[Estimate, Estimate]]]] = [
        ("yes/no, randomized response α = 0.5 (vs Clopper–Pearson)", yes_no),
        ("categorical, GRR k = 4, ε = 1 (vs Clopper–Pearson, mean)", categorical),
        ("numeric, Duchi ε = 1 (vs t)", numeric(DuchiMechanism.from_epsilon(0, 1, 1.0))),
        ("numeric, Piecewise ε = 1 (vs t)", numeric(PiecewiseMechanism.from_epsilon(0, 1, 1.0))),
        ("numeric, Laplace ε = 1 (vs t)", numeric(LaplaceMechanism.from_epsilon(0, 1, 1.0))),
    ]
    rows = []
    for label, run in cases:
        ratios = [_width(any_) / _width(fixed) for fixed, any_ in map(run, (1_000, 10_000))]
        rows.append((label, ratios[0], ratios[1]))
    return rows


def _width(estimate: Estimate) -> float:
    fields = estimate.wire_fields(pb.Question())
    if "options" in fields:
        return float(np.mean([o.ci_high - o.ci_low for o in fields["options"]]))
    return float(fields["ci_high"] - fields["ci_low"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="FILE", help="write the figure (SVG or PNG)")
    parser.add_argument("--runs", type=int, default=4000, help="simulated numeric surveys")
    args = parser.parse_args(argv)
    curves: dict[str, NDArray[np.float64]] = {}
    for rate in (0.5, 0.05):
        curves[f"yes/no report rate {rate:g}: Clopper–Pearson, fixed n (exact)"] = exact_missed_by(
            rate, lambda y, n: binomial_interval(y, n, 0.95, "clopper-pearson")
        )
        curves[f"yes/no report rate {rate:g}: --anytime (exact)"] = exact_missed_by(
            rate, lambda y, n: anytime_rate_interval(y, n, 0.95)
        )
    for kind, seed in (("laplace", 1), ("piecewise", 2)):
        spec = mechanism_of_kind(kind)
        anytime, fixed = simulated_missed_by(spec, args.runs, seed)
        curves[f"{kind} ε = 1 mean: t-interval, fixed n ({args.runs} runs)"] = fixed
        curves[f"{kind} ε = 1 mean: --anytime ({args.runs} runs)"] = anytime
    print("P(missed the truth at some look), looking after every 100 reports (95% intervals)")
    print(f"{'interval':<62} {'n=1000':>8} {'n=5000':>8} {'n=10^4':>8}")
    for label, curve in curves.items():
        print(f"{label:<62} {curve[9]:>8.4f} {curve[49]:>8.4f} {curve[99]:>8.4f}")
    print()
    print("Width of the anytime interval over the fixed-n one (95%)")
    print(f"{'question':<62} {'n=1000':>8} {'n=10^4':>8}")
    for label, at_1000, at_10000 in width_ratios():
        print(f"{label:<62} {at_1000:>8.2f} {at_10000:>8.2f}")
    if args.plot:
        plot(curves, args.plot)
    return 0


def mechanism_of_kind(kind: str) -> NumericMechanism:
    """The numeric mechanism ``kind`` at ε = 1 on [0, 1]."""
    from deniable.shared.questions import numeric_mechanism

    spec = numeric_mechanism(kind, 0.0, 1.0, 1.0)
    assert isinstance(spec, NumericMechanism)
    return spec


def plot(curves: dict[str, NDArray[np.float64]], path: str) -> None:
    """Miss-by-look curves, fixed-n dashed, anytime solid, with the 5% line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        sys.exit("the plot needs matplotlib: pip install 'deniable[plot]'")
    matplotlib.rcParams["svg.hashsalt"] = "deniable"  # the same figure gives the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a smaller file
    figure, axes = pyplot.subplots(figsize=(8, 4.8))
    families = list(dict.fromkeys(label.split(":")[0] for label in curves))
    for label, curve in curves.items():
        style = "-" if "anytime" in label else "--"
        color = f"C{families.index(label.split(':')[0])}"  # one colour per question
        axes.plot(LOOKED, curve, style, color=color, label=label, linewidth=1.4)
    axes.axhline(0.05, color="black", linewidth=0.8, linestyle=":", label="5% (the promise)")
    axes.set_xlabel("reports so far (looked at after every 100)")
    axes.set_ylabel("P(interval has missed the truth at some look)")
    axes.set_ylim(0, 0.6)
    axes.set_title("95% intervals under repeated looks: fixed-n vs anytime-valid")
    axes.legend(fontsize=7, loc="upper left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
