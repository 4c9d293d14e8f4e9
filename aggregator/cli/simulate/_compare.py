"""``simulate --compare-central``: local randomized response against a curator's Laplace count."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from deniable.aggregator.analysis.simulation import (
    ModelsCompared,
    compare_local_central,
    sizes_up_to,
)
from deniable.aggregator.cli._common import emit_json, user_errors
from deniable.aggregator.cli._plot import check_plot_path, pyplot
from deniable.aggregator.questions import privacy_line
from deniable.shared.mechanisms import Mechanism, RandomizedResponse

__all__ = ["DEFAULT_REPEATS", "compare_command_line"]

DEFAULT_REPEATS = 200
"""Repeats per number of participants when --repeats is not given."""


def compare_command_line(
    share: float, spec: Mechanism, participants: int, *, repeats: int,
    confidence: float, method: str, seed: int | None, plot: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Run the comparison, print it (or its JSON) and draw it when asked."""
    check_plot_path(plot)
    with user_errors():
        # Randomized response is the one yes/no mechanism registered (the binary analysis
        # alone compares with a central count).
        compared = compare_local_central(
            share, cast(RandomizedResponse, spec), sizes_up_to(participants), repeats=repeats,
            confidence=confidence, method=method, seed=seed,
        )  # fmt: skip
    if plot is not None:
        draw(compared, plot)
    if as_json:
        emit_json(compared.to_dict() | {"plot": None if plot is None else str(plot)})
        return
    _print(compared, spec)
    if plot is not None:
        click.echo(f"Plot: {plot}")


def _print(compared: ModelsCompared, spec: Mechanism) -> None:
    click.echo(
        f"Local vs central at the same epsilon, true share p = {compared.p:g}, "
        f"{compared.repeats:,} repeats per size (randomness: {compared.randomness})"
    )
    click.echo(privacy_line(spec))
    click.echo(
        "Error on the share against the sample's own share (the privacy noise alone; "
        "sampling error is the same for both), unclipped estimates:"
    )
    level = f"{compared.confidence:.0%} CI width"
    click.echo(
        f"  {'participants':>12}  {'local RMSE':>10}  {'theory':>9}  {'central RMSE':>12}"
        f"  {'theory':>9}  {'local/central':>13}  {level + ' local':>18}  {'central':>8}"
    )
    for row in compared.rows:
        click.echo(
            f"  {row.participants:>12,}  {row.local_rmse:>10.3g}  {row.local_theory:>9.3g}"
            f"  {row.central_rmse:>12.3g}  {row.central_theory:>9.3g}  {row.ratio:>13.1f}"
            f"  {row.local_width:>18.4f}  {row.central_width:>8.4f}"
        )
    click.echo(
        "Local: each participant randomizes on their own device (randomized response); "
        "the epsilon holds against the aggregator's operator; error ~ 1/sqrt(n)."
    )
    click.echo(
        "Central: a trusted curator holds every raw answer and releases the yes-count plus "
        "discrete Laplace noise of scale 1/epsilon (sensitivity 1); the epsilon holds only "
        "against readers of the release, not the curator; error ~ 1/n."
    )
    click.echo(
        f"Intervals: local {compared.method} for the population share (it holds through "
        "sampling and noise together); central the exact discrete Laplace quantile for the "
        "table's own count (count ± k, width 2k/n before clamping to [0, 1])."
    )


def draw(compared: ModelsCompared, path: Path) -> None:
    """Both RMSEs (measured and theory) against n on log-log axes, written to ``path``."""
    plt = pyplot()
    sizes = [row.participants for row in compared.rows]
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for label, measured, theory, marker in (
        ("local (randomized response)", [r.local_rmse for r in compared.rows],
         [r.local_theory for r in compared.rows], "o"),
        ("central (Laplace count)", [r.central_rmse for r in compared.rows],
         [r.central_theory for r in compared.rows], "s"),
    ):  # fmt: skip
        (line,) = axes.plot(sizes, theory, label=f"{label}, theory")
        axes.plot(sizes, measured, marker, color=line.get_color(), label=f"{label}, measured")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("participants n")
    axes.set_ylabel("RMSE of the share (privacy noise)")
    axes.set_title(f"Local vs central at epsilon = {compared.epsilon:.4g}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    try:
        figure.savefig(path)
    except OSError as error:
        raise click.FileError(str(path), hint=error.strerror or str(error)) from None
    finally:
        plt.close(figure)
