"""The figures beside the docs' tables of numbers, drawn from the same functions (no randomness).

Writes four SVGs into docs/ (needs the ``plot`` extra: pip install 'deniable[plot]'):

- ``exact_coverage.svg`` (statistics.md, "Exact coverage at 95%"): each interval method's
  exact coverage against n, from the binomial pmf, at the two (p, α) of the table that
  tell the methods apart.
- ``participants_categorical.svg`` (mechanisms.md, "The auto rule"): participants for a
  margin of ±0.05 at the worst share against ε, per mechanism, for k = 3, 10, 50, 200
  (what ``deniable-aggregator plan --type categorical --plot`` draws for one k).
- ``numeric_variance.svg`` (mechanisms.md, numbers): the worst-case variance of one
  report given a value (the table), and for the worst population (what ``plan`` uses).
- ``central_epsilon.svg`` (privacy.md, release steps): the central ε of a step of m
  reports against m, per local ε₀, at δ = 10⁻⁶.

Every figure is computed exactly (no simulation), so a rerun writes the same files:

    .venv/bin/python bench/docs_figures.py [--out docs] [--only NAME ...]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deniable.aggregator.analysis.planning._compared import plan_question
from deniable.shared.mechanisms._rr_coverage import exact_coverage
from deniable.shared.privacy import shuffled_epsilon
from deniable.shared.questions import numeric_mechanism

EPSILONS = tuple(float(e) for e in np.geomspace(0.25, 8.0, 21))
"""ε from 0.25 to 8, 21 points evenly spaced on a log scale."""

METHODS = ("clopper-pearson", "wilson", "wald", "chebyshev")

STYLES = ("-", "--", "-.", ":")
"""One line style per mechanism, so that lines lying on one another stay visible."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("the figures need matplotlib: pip install 'deniable[plot]'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "deniable"  # the same figure gives the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a smaller file
    from matplotlib import pyplot

    return pyplot


def _epsilon_axis(axes: Any) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("ε per answer")
    axes.grid(True, alpha=0.3)


def _save(figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None})
    _pyplot().close(figure)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


def exact_coverage_figure(path: Path) -> None:
    """Coverage against n (10..2000) per method at (p, α) = (0.3, 0.5) and (0.01, 0.9)."""
    plt = _pyplot()
    sizes = np.unique(np.geomspace(10, 2000, 90).astype(int))
    figure, panels = plt.subplots(1, 2, figsize=(9.6, 4.0), sharey=True)
    for axes, (p, alpha) in zip(panels, ((0.3, 0.5), (0.01, 0.9)), strict=True):
        for method in METHODS:
            coverage = [exact_coverage(int(n), p, alpha, 0.95, method) for n in sizes]
            axes.plot(sizes, coverage, label=method, linewidth=1.2)
        axes.axhline(0.95, color="black", linestyle=":", linewidth=0.8, label="nominal 0.95")
        axes.set_xscale("log")
        axes.set_xlabel("participants n")
        axes.set_title(f"p = {p:g}, α = {alpha:g}")
        axes.grid(True, alpha=0.3)
    panels[0].set_ylabel("exact coverage of the 95% interval")
    panels[0].set_ylim(0.6, 1.005)
    panels[1].legend(fontsize="small", loc="lower right")
    _save(figure, path)


def participants_figure(path: Path) -> None:
    """Participants for ±0.05 (95%, worst share) against ε, per mechanism, for 4 values of k."""
    plt = _pyplot()
    figure, panels = plt.subplots(1, 4, figsize=(12.8, 3.6), sharey=True)
    for axes, k in zip(panels, (3, 10, 50, 200), strict=True):
        curves: dict[str, list[int]] = {}
        for epsilon in EPSILONS:
            plan = plan_question("categorical", k, epsilon=epsilon, margin=0.05)
            for row in plan.mechanisms:
                curves.setdefault(row.mechanism, []).append(row.participants)
        for (mechanism, participants), style in zip(curves.items(), STYLES, strict=False):
            axes.plot(EPSILONS, participants, style, label=mechanism, linewidth=1.4)
        _epsilon_axis(axes)
        axes.set_yscale("log")
        axes.set_title(f"k = {k} options")
    panels[0].set_ylabel("participants for ±0.05 (95%)")
    panels[0].legend(fontsize="small")
    _save(figure, path)


def numeric_variance_figure(path: Path) -> None:
    """Worst-case Var of one report on [−1, 1]: given one value, and for the worst population."""
    plt = _pyplot()
    values = np.linspace(-1.0, 1.0, 201)
    kinds = ("laplace", "duchi", "piecewise", "hybrid")
    given: dict[str, list[float]] = {kind: [] for kind in kinds}
    population: dict[str, list[float]] = {kind: [] for kind in kinds}
    for epsilon in EPSILONS:
        for kind in kinds:
            mechanism = numeric_mechanism(kind, -1.0, 1.0, epsilon)
            given[kind].append(max(mechanism.variance(float(t)) for t in values))
        plan = plan_question("numeric", -1.0, 1.0, epsilon=epsilon, participants=1)
        for row in plan.mechanisms:
            population[row.mechanism].append(row.variance_one)
    figure, panels = plt.subplots(1, 2, figsize=(9.6, 4.0), sharey=True)
    for axes, curves, title in (
        (panels[0], given, "given one value: max over t of Var(y | t)"),
        (panels[1], population, "worst population: Var₁ (what plan and auto use)"),
    ):
        for kind, style in zip(kinds, STYLES, strict=True):
            axes.plot(EPSILONS, curves[kind], style, label=kind, linewidth=1.4)
        _epsilon_axis(axes)
        axes.set_yscale("log")
        axes.set_title(title, fontsize="medium")
    panels[0].set_ylabel("variance of one report on [−1, 1]")
    panels[0].legend(fontsize="small")
    _save(figure, path)


def central_epsilon_figure(path: Path) -> None:
    """Central ε at δ = 10⁻⁶ against the step m (100..10⁵), one line per local ε₀."""
    plt = _pyplot()
    steps = np.unique(np.geomspace(100, 100_000, 25).astype(int))
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for local in (0.5, 1.0, 2.0, 4.0):
        central = [shuffled_epsilon(local, int(m), 1e-6) for m in steps]
        (line,) = axes.plot(steps, central, label=f"ε₀ = {local:g}", linewidth=1.4)
        axes.axhline(local, color=line.get_color(), linestyle=":", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("reports per release step m")
    axes.set_ylabel("central ε at δ = 10⁻⁶")
    axes.set_title("Released estimates: central ε of a step (dotted: the local ε₀)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    _save(figure, path)


FIGURES: dict[str, Callable[[Path], None]] = {
    "exact_coverage": exact_coverage_figure,
    "participants_categorical": participants_figure,
    "numeric_variance": numeric_variance_figure,
    "central_epsilon": central_epsilon_figure,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "docs")
    parser.add_argument("--only", nargs="+", choices=sorted(FIGURES), help="these figures only")
    args = parser.parse_args(argv)
    for name in args.only or FIGURES:
        FIGURES[name](args.out / f"{name}.svg")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
