"""``--plot FILE``: the file's format from its suffix, matplotlib headless, one-line errors."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "FORMATS",
    "MAX_EPSILONS",
    "PLOT_EXTRA",
    "check_plot_path",
    "epsilon_axis",
    "parse_epsilons",
    "pyplot",
    "save",
]

FORMATS = (".png", ".svg", ".pdf")
"""The suffixes ``--plot`` draws (the format follows the suffix)."""
PLOT_EXTRA = "pip install 'deniable[plot]'"
"""What installs matplotlib, named when it is missing."""


MAX_EPSILONS = 50
"""At most this many ε values in one ``--epsilons`` (a sweep runs every repeat at each)."""


def parse_epsilons(text: str) -> tuple[float, ...]:
    """``0.5,1,2,4`` as finite positive values, distinct and increasing.

    Raises:
        ValueError: a value is not a number, not finite and positive, repeated or out of
            order, or there are none or more than ``MAX_EPSILONS`` (naming the value).
    """
    values: list[float] = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(
                f"epsilons must be numbers separated by commas, got {part!r}"
            ) from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"each epsilon must be finite and positive, got {part.strip()!r}")
        if values and value <= values[-1]:
            raise ValueError(f"epsilons must increase, got {part.strip()!r} after {values[-1]:g}")
        values.append(value)
    if len(values) > MAX_EPSILONS:
        raise ValueError(f"at most {MAX_EPSILONS} epsilons, got {len(values)}")
    return tuple(values)


def check_plot_path(path: Path | None) -> None:
    """Refuse a ``--plot`` file whose suffix is not a format drawn (a usage error, exit 2)."""
    if path is not None and path.suffix.lower() not in FORMATS:
        raise click.BadParameter(
            f"{str(path)!r} must end in .png, .svg or .pdf (the format follows the suffix)",
            param_hint="--plot",
        )


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend, imported only when a plot is drawn.

    Raises:
        click.UsageError: matplotlib is not installed (one line naming the plot extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small, searchable SVG
        matplotlib.rcParams["svg.hashsalt"] = "deniable"  # stable ids: reproducible SVGs
        import matplotlib.pyplot as plt
    except ImportError:
        raise click.UsageError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    return plt


def save(figure: Figure, path: Path) -> None:
    """Write ``figure`` to ``path`` (format from the suffix) and close it."""
    plt = pyplot()
    try:
        figure.savefig(path, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    except OSError as error:
        raise click.FileError(str(path), hint=error.strerror or str(error)) from None
    finally:
        plt.close(figure)


def epsilon_axis(axes: Axes) -> None:
    """ε on a log₂ x axis labelled with plain numbers (0.5, 1, 2, ...)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("epsilon per answer")
