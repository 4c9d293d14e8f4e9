"""Options that ``plan`` and ``simulate`` share for multiple-choice, numeric and joint questions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from deniable.aggregator.analysis._distributions import parse_options
from deniable.aggregator.cli._common import user_errors
from deniable.aggregator.cli._joint import PART_HELP
from deniable.shared.mechanisms import registered
from deniable.shared.questions import CATEGORICAL

__all__ = [
    "QUESTION_TYPES",
    "categorical_inputs",
    "kind_options",
    "mechanism_summary",
    "numeric_inputs",
    "reject_options",
]

F = TypeVar("F", bound=Callable[..., Any])

QUESTION_TYPES = ("binary", "categorical", "numeric", "joint", "multi_select")

SHOWN_PARAMETERS = (
    "alpha", "q", "g", "p_star", "q_star", "noise_scale", "grid_bits", "beta", "bound", "p_max",
    "p_center",
)  # fmt: skip


def kind_options(function: F) -> F:
    """Add ``--type``, ``--options``, ``--mechanism``, ``--min``, ``--max`` and ``--part``."""
    options = [
        click.option(
            "--type",
            "question_type",
            type=click.Choice(QUESTION_TYPES),
            default="binary",
            show_default=True,
            help="Question type: yes/no, one of k options, a number on [--min, --max], "
            "a joint question of --part parts answered in one report, or any set of k items.",
        ),
        click.option(
            "--options",
            "options",
            help="categorical: the number of options K, or comma-separated option names; "
            "multi_select: the items, likewise.",
        ),
        click.option(
            "--mechanism",
            help="categorical: auto|grr|oue|olh; numeric: auto|laplace|duchi|piecewise|hybrid; "
            "multi_select: auto|item_rr "
            "(default auto: the least worst-case variance).",
        ),
        click.option("--min", "lo", type=float, help="numeric: lower end of the range."),
        click.option("--max", "hi", type=float, help="numeric: upper end of the range."),
        click.option("--part", "parts", multiple=True, metavar="PART", help=PART_HELP),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def reject_options(question_type: str, names: Sequence[str]) -> None:
    """Raise a usage error for the first option in ``names`` given for ``question_type``.

    An option counts as given when it came from the command line or the environment.
    """
    context = click.get_current_context()
    for param in context.command.params:
        if param.name not in names:
            continue
        source = context.get_parameter_source(param.name)
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            raise click.UsageError(f"{param.opts[0]} does not apply to --type {question_type}")


def categorical_inputs(
    options: str | None, mechanism: str | None, epsilon: float | None, alpha: float | None
) -> tuple[tuple[str, ...], str]:
    """Option names and mechanism kind, after the usage checks of a categorical question."""
    if options is None:
        raise click.UsageError(
            "--type categorical needs --options (a number K or comma-separated names)"
        )
    if (alpha is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --alpha or --epsilon")
    kind = mechanism or "auto"
    with_alpha = CATEGORICAL.alpha_mechanism  # the one mechanism a keep-probability names
    if alpha is not None and kind != with_alpha:
        raise click.UsageError(f"--alpha applies only to --mechanism {with_alpha}; give --epsilon")
    with user_errors():
        return parse_options(options), kind


def numeric_inputs(
    lo: float | None, hi: float | None, mechanism: str | None, epsilon: float | None
) -> tuple[float, float, str, float]:
    """(lo, hi, kind, epsilon) after the usage checks of a numeric question."""
    if lo is None or hi is None:
        raise click.UsageError("--type numeric needs --min and --max")
    if epsilon is None:
        raise click.UsageError("--type numeric needs --epsilon")
    return lo, hi, mechanism or "auto", epsilon


def mechanism_summary(description: dict[str, Any]) -> str:
    """``kind (full name): parameters`` from a spec's ``describe()``."""
    kind = str(description["mechanism"])
    name = registered()[kind].title or kind if kind in registered() else kind
    parameters = ", ".join(
        f"{key} = {value:.6g}" if isinstance(value, float) else f"{key} = {value}"
        for key, value in description.items()
        if key in SHOWN_PARAMETERS
    )
    return f"{kind} ({name}): {parameters}"
