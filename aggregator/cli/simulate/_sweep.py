"""``simulate --epsilons`` / ``--plot``: accuracy and coverage against ε, a table and a figure."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
from click.core import ParameterSource

from deniable.aggregator.analysis.simulation import (
    DEFAULT_EPSILONS,
    Accuracy,
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
from deniable.aggregator.cli._question_spec import QuestionInputs
from deniable.aggregator.cli.simulate._compare import DEFAULT_REPEATS
from deniable.aggregator.questions import QuestionAnalysis, SimulationRequest, Transport, analyses
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.mechanisms import Mechanism
from deniable.shared.questions import question_from_spec
from deniable.shared.stats import check_method
from deniable.shared.wire.v1 import aggregator_pb2 as pb

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["default_repeats", "figure_of", "sweep_command_line", "sweep_question"]

NOT_IN_A_SWEEP = (
    "alpha", "epsilon", "transport", "server", "tls_ca", "tls_cert", "tls_key",
    "admin_token_file", "batch_size", "parts", "spec_file",
)  # fmt: skip
"""Options a sweep refuses: it runs every ε given by --epsilons, in process."""


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


def sweep_question(values: dict[str, object], epsilon: float) -> tuple[QuestionInputs, list[str]]:
    """The swept question (at ``epsilon``) and the mechanisms asked for (the type is swept).

    ``--mechanism`` may name several, comma-separated; by default every mechanism of the
    type that plans at a given ε.
    """
    asked = values.get("mechanism")
    inputs = QuestionInputs({**values, "mechanism": None, "epsilon": epsilon})
    qtype = inputs.analysis.question_type
    if asked is None:
        return inputs, [cls.name for cls in qtype.mechanisms() if qtype.plannable(cls)]
    names = [name.strip() for name in str(asked).split(",")]
    if len(set(names)) != len(names):
        raise click.UsageError(f"--mechanism names a mechanism twice: {asked!r}")
    return inputs, names


def _check_swept(kind: str) -> None:
    swept = [name for name, analysis in analyses().items() if analysis.sweeps]
    if kind not in swept:
        raise click.UsageError(
            f"--plot and --epsilons apply to --type {', '.join(swept[:-1])} or {swept[-1]}, "
            f"not {kind}"
        )


def _simulator(
    inputs: QuestionInputs, request: SimulationRequest, mechanisms: list[str], first: float
) -> Simulate:
    """A function running one (mechanism, ε, seed), after checking every input once."""
    analysis: QuestionAnalysis = inputs.analysis

    def question(kind: str, epsilon: float) -> tuple[pb.Question, Mechanism]:
        item = {**inputs.item, "mechanism": kind, "epsilon": epsilon}
        return question_from_spec(item, "--mechanism", survey_limits=False)

    with user_errors():
        for kind in mechanisms:
            analysis.simulation(*question(kind, first), request)

    def run(kind: str, epsilon: float, seed: int | None) -> Accuracy:
        asked, mechanism = question(kind, epsilon)
        simulation = analysis.simulation(asked, mechanism, replace(request, seed=seed))
        with ExitStack() as stack:
            outcome = simulation.run(Transport(stack))
        return analysis.accuracy(outcome.result)

    return run


def sweep_command_line(
    values: dict[str, object],
    request: SimulationRequest,
    epsilons: str | None,
    *,
    plot: Path | None,
    as_json: bool,
) -> None:
    """Check the inputs, run the sweep, print its table (or JSON) and draw it when asked."""
    _check_swept(str(values["question_type"]))
    _reject_foreign()
    check_plot_path(plot)
    try:
        values_of = DEFAULT_EPSILONS if epsilons is None else parse_epsilons(epsilons)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--epsilons") from None
    inputs, mechanisms = sweep_question(values, values_of[0])
    inputs.reject_inputs(inputs.analysis.simulate_inputs, ["share", "distribution", "method"], "")
    with user_errors():
        as_count("participants", request.participants, minimum=1)
        as_count("repeats", request.repeats, minimum=2)
        check_open_unit("confidence", request.confidence)
        check_method(request.method)
    simulate = _simulator(inputs, request, mechanisms, values_of[0])
    plt = pyplot() if plot is not None else None  # a missing extra fails before the work
    total = len(mechanisms) * len(values_of)
    with (
        user_errors(),
        progress(total, "simulating", "points", enabled=shows_progress(as_json)) as advance,
    ):
        result = sweep(
            inputs.kind, simulate, mechanisms, values_of,
            participants=request.participants, repeats=request.repeats,
            confidence=request.confidence, method=request.method, seed=request.seed,
            progress=advance,
        )  # fmt: skip
    if plot is not None and plt is not None:
        save(figure_of(result), plot)
    if as_json:
        emit_json(result.to_dict() | {"plot": None if plot is None else str(plot)})
        return
    _print(result, inputs.analysis)
    if plot is not None:
        click.echo(f"Plot: {plot}")


def default_repeats(repeats: int) -> int:
    """``--repeats`` as given, or the sweep's default when it was left at 1 by default."""
    context = click.get_current_context()
    given = context.get_parameter_source("repeats") != ParameterSource.DEFAULT
    return repeats if given else DEFAULT_REPEATS


def _print(result: SweepResult, analysis: QuestionAnalysis) -> None:
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
    method = result.method if "method" in analysis.simulate_inputs else "auto"
    click.echo(
        f"RMSE: of the unbiased estimate against the truth{analysis.sweep_note}, in the "
        f"question's units; intervals: {method} at {result.confidence:g}."
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
