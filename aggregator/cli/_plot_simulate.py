"""``simulate --epsilons`` / ``--plot``: accuracy and coverage against ε, a table and a figure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click
from click.core import ParameterSource

from deniable.aggregator.analysis._distributions import (
    NumericDistribution,
    check_shares,
    parse_options,
    parse_shares,
)
from deniable.aggregator.analysis._simulate import simulate_binary
from deniable.aggregator.analysis._simulate_categorical import (
    CategoricalSimulation,
    simulate_categorical,
)
from deniable.aggregator.analysis._simulate_numeric import NumericSimulation, simulate_numeric
from deniable.aggregator.analysis._simulate_sweep import (
    DEFAULT_EPSILONS,
    Simulate,
    SweepResult,
    sweep,
)
from deniable.aggregator.cli._common import emit_json, user_errors
from deniable.aggregator.cli._plot import (
    check_plot_path,
    epsilon_axis,
    parse_epsilons,
    pyplot,
    save,
)
from deniable.aggregator.cli._progress import progress, shows_progress
from deniable.aggregator.cli._simulate_compare import DEFAULT_REPEATS
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.mechanisms import RandomizedResponse
from deniable.shared.questions import categorical_mechanism, numeric_mechanism, question_type
from deniable.shared.stats import check_method

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SweepInputs", "default_repeats", "figure_of", "sweep_command_line"]

SWEPT_TYPES = ("binary", "categorical", "numeric")

NOT_IN_A_SWEEP = (
    "alpha", "epsilon", "transport", "server", "tls_ca", "tls_cert", "tls_key",
    "admin_token_file", "batch_size", "parts",
)  # fmt: skip
"""Options a sweep refuses: it runs every ε given by --epsilons, in process."""


@dataclass(frozen=True)
class SweepInputs:
    """What ``simulate`` was given, as far as a sweep uses it."""

    question_type: str
    participants: int
    share: float | None
    options: str | None
    mechanism: str | None
    lo: float | None
    hi: float | None
    distribution: str | None
    repeats: int
    confidence: float
    method: str
    seed: int | None


def _reject_foreign() -> None:
    """A usage error for the first option given that a sweep does not use."""
    context = click.get_current_context()
    for param in context.command.params:
        if param.name not in NOT_IN_A_SWEEP:
            continue
        source = context.get_parameter_source(param.name)
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            hint = "; give the values with --epsilons" if param.name in ("alpha", "epsilon") else ""
            raise click.UsageError(
                f"{param.opts[0]} does not apply to a sweep over --epsilons (--plot runs one, "
                f"in process){hint}"
            )


def _mechanisms(kind: str, mechanism: str | None) -> list[str]:
    """The mechanisms asked for (comma-separated), or every one of the type that plans at ε."""
    if kind == "binary":
        if mechanism is not None:
            raise click.UsageError("--mechanism does not apply to --type binary")
        return ["rr"]
    if mechanism is not None:
        names = [name.strip() for name in mechanism.split(",")]
        if len(set(names)) != len(names):
            raise click.UsageError(f"--mechanism names a mechanism twice: {mechanism!r}")
        return names
    qtype = question_type(kind)
    return [cls.name for cls in qtype.mechanisms() if qtype.plannable(cls)]


def _simulator(inputs: SweepInputs, mechanisms: list[str], first: float) -> Simulate:
    """A function running one (mechanism, ε, seed), after checking every input once."""
    n, runs, level = inputs.participants, inputs.repeats, inputs.confidence
    if inputs.question_type == "binary":
        if inputs.share is None:
            raise click.UsageError("--type binary needs --p (the true yes-share)")
        p = inputs.share

        def binary(_kind: str, epsilon: float, seed: int | None) -> Any:
            spec = RandomizedResponse.from_epsilon(epsilon)
            return simulate_binary(
                n, p, spec, repeats=runs, confidence=level, method=inputs.method, seed=seed
            )

        return binary
    if inputs.distribution is None:
        example = "0.5,0.3,0.2" if inputs.question_type == "categorical" else "uniform"
        raise click.UsageError(
            f"--type {inputs.question_type} needs --distribution (e.g. {example})"
        )
    if inputs.question_type == "categorical":
        if inputs.options is None:
            raise click.UsageError(
                "--type categorical needs --options (a number K or comma-separated names)"
            )
        with user_errors():
            names = parse_options(inputs.options)
            shares = check_shares(parse_shares(inputs.distribution), len(names))
            for kind in mechanisms:
                categorical_mechanism(kind, len(names), first)

        def categorical(kind: str, epsilon: float, seed: int | None) -> CategoricalSimulation:
            spec = categorical_mechanism(kind, len(names), epsilon)
            return simulate_categorical(
                n, shares, spec, options=names, repeats=runs, confidence=level,
                method=inputs.method, seed=seed,
            )  # fmt: skip

        return categorical
    if inputs.lo is None or inputs.hi is None:
        raise click.UsageError("--type numeric needs --min and --max")
    lo, hi = inputs.lo, inputs.hi
    with user_errors():
        values = NumericDistribution.parse(inputs.distribution)
        for kind in mechanisms:
            built = numeric_mechanism(kind, lo, hi, first)
            values.check_range(built.lo, built.hi)

    def numeric(kind: str, epsilon: float, seed: int | None) -> NumericSimulation:
        spec = numeric_mechanism(kind, lo, hi, epsilon)
        return simulate_numeric(n, values, spec, repeats=runs, confidence=level, seed=seed)

    return numeric


def sweep_command_line(
    inputs: SweepInputs, epsilons: str | None, *, plot: Path | None, as_json: bool
) -> None:
    """Check the inputs, run the sweep, print its table (or JSON) and draw it when asked."""
    if inputs.question_type not in SWEPT_TYPES:
        raise click.UsageError(
            f"--plot and --epsilons apply to --type binary, categorical or numeric, "
            f"not {inputs.question_type}"
        )
    _reject_foreign()
    check_plot_path(plot)
    if inputs.question_type == "binary":
        given = (("--options", inputs.options), ("--min", inputs.lo), ("--max", inputs.hi),
                 ("--distribution", inputs.distribution))  # fmt: skip
        for name, value in given:
            if value is not None:
                raise click.UsageError(f"{name} does not apply to --type binary")
    elif inputs.question_type == "categorical" and (inputs.lo, inputs.hi) != (None, None):
        raise click.UsageError("--min and --max do not apply to --type categorical")
    elif inputs.question_type == "numeric" and inputs.options is not None:
        raise click.UsageError("--options does not apply to --type numeric")
    source = click.get_current_context().get_parameter_source("method")
    if inputs.question_type == "numeric" and source == ParameterSource.COMMANDLINE:
        raise click.UsageError("--method does not apply to --type numeric (its interval is chosen)")
    try:
        values = DEFAULT_EPSILONS if epsilons is None else parse_epsilons(epsilons)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--epsilons") from None
    with user_errors():
        as_count("participants", inputs.participants, minimum=1)
        as_count("repeats", inputs.repeats, minimum=2)
        check_open_unit("confidence", inputs.confidence)
        check_method(inputs.method)
    mechanisms = _mechanisms(inputs.question_type, inputs.mechanism)
    simulate = _simulator(inputs, mechanisms, values[0])
    plt = pyplot() if plot is not None else None  # a missing extra fails before the work
    total = len(mechanisms) * len(values)
    with (
        user_errors(),
        progress(total, "simulating", "points", enabled=shows_progress(as_json)) as advance,
    ):
        result = sweep(
            inputs.question_type, simulate, mechanisms, values,
            participants=inputs.participants, repeats=inputs.repeats,
            confidence=inputs.confidence, method=inputs.method, seed=inputs.seed,
            progress=advance,
        )  # fmt: skip
    if plot is not None and plt is not None:
        save(figure_of(result), plot)
    if as_json:
        emit_json(result.to_dict() | {"plot": None if plot is None else str(plot)})
        return
    _print(result)
    if plot is not None:
        click.echo(f"Plot: {plot}")


def default_repeats(repeats: int) -> int:
    """``--repeats`` as given, or the sweep's default when it was left at 1 by default."""
    context = click.get_current_context()
    given = context.get_parameter_source("repeats") != ParameterSource.DEFAULT
    return repeats if given else DEFAULT_REPEATS


def _print(result: SweepResult) -> None:
    randomness = "os-csprng" if result.seed is None else "seeded-pcg64"
    click.echo(
        f"Accuracy and coverage against epsilon: --type {result.question_type}, "
        f"{result.participants:,} participants, {result.repeats:,} repeats per point "
        f"(in process; randomness: {randomness})"
    )
    click.echo(
        f"  {'mechanism':<10} {'epsilon':>8} {'RMSE':>10} {'mean CI width':>14} "
        f"{'coverage ± MC SE':>17}"
    )
    for point in result.points:
        click.echo(
            f"  {point.mechanism:<10} {point.epsilon:>8.4g} {point.rmse:>10.4g} "
            f"{point.mean_width:>14.4g} {point.coverage:>8.4f} ± {point.coverage_se:.4f}"
        )
    per_option = " (mean over options)" if result.question_type == "categorical" else ""
    click.echo(
        f"RMSE: of the unbiased estimate against the truth{per_option}, in the question's "
        f"units; intervals: {result.method if result.question_type != 'numeric' else 'auto'}"
        f" at {result.confidence:g}."
    )
    click.echo(
        f"Coverage band: an interval whose coverage is the nominal {result.confidence:g} "
        f"shows an empirical coverage in [{result.band_low:.4f}, {result.band_high:.4f}] over "
        f"{result.repeats:,} repeats with probability {result.band_level:g} (exact binomial)."
    )


def figure_of(result: SweepResult) -> Figure:
    """Left: RMSE (solid) and mean interval width (dashed) against ε; right: coverage + band."""
    plt = pyplot()
    figure, (accuracy, coverage) = plt.subplots(1, 2, figsize=(9.6, 4.0))
    for mechanism, points in result.series().items():
        epsilons = [point.epsilon for point in points]
        (line,) = accuracy.plot(epsilons, [point.rmse for point in points], "o-", label=mechanism)
        accuracy.plot(
            epsilons, [point.mean_width for point in points], "s--", color=line.get_color()
        )
        coverage.errorbar(
            epsilons, [point.coverage for point in points],
            yerr=[point.coverage_se for point in points], fmt="o-", color=line.get_color(),
            capsize=3, label=mechanism,
        )  # fmt: skip
    epsilon_axis(accuracy)
    accuracy.set_yscale("log")
    accuracy.set_ylabel("RMSE (solid), mean CI width (dashed)")
    accuracy.set_title(f"{result.question_type}, n = {result.participants:,}: accuracy")
    accuracy.grid(True, which="both", alpha=0.3)
    accuracy.legend(fontsize="small")
    coverage.axhspan(
        result.band_low, result.band_high, color="0.85",
        label=f"{result.band_level:.0%} binomial band ({result.repeats:,} repeats)",
    )  # fmt: skip
    coverage.axhline(result.confidence, color="0.3", linestyle=":", label="nominal")
    epsilon_axis(coverage)
    coverage.set_ylabel("empirical coverage ± MC SE")
    coverage.set_title("interval coverage")
    coverage.grid(True, alpha=0.3)
    coverage.legend(fontsize="small")
    figure.tight_layout()
    return cast("Figure", figure)
