"""``deniable-aggregator simulate``: a simulated population through client and estimator."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from deniable.aggregator.analysis.simulation import DEFAULT_EPSILONS
from deniable.aggregator.cli._common import (
    admin_token_file_option,
    emit_json,
    mechanism_options,
    overflow_is_invalid_input,
    read_token,
    remote_errors,
    user_errors,
)
from deniable.aggregator.cli._progress import simulation_progress
from deniable.aggregator.cli._question_spec import (
    QuestionInputs,
    question_options,
    reject_options,
)
from deniable.aggregator.cli.simulate._compare import DEFAULT_REPEATS, compare_command_line
from deniable.aggregator.cli.simulate._sweep import default_repeats, sweep_command_line
from deniable.aggregator.questions import SimulationRequest, Transport, analyses
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.stats import METHODS, check_method
from deniable.shared.transport import TlsConfig
from deniable.shared.transport.options import check_server, client_tls_options


@click.command("simulate")
@click.option("--participants", type=int, required=True, help="Participants per survey.")
@click.option("--p", "share", type=float, help="binary: true population yes-share (required).")
@question_options
@click.option(
    "--distribution",
    help="categorical: true option shares such as 0.5,0.3,0.2 (non-negative, summing to 1); "
    "numeric: constant:V, uniform or beta:A,B (a Beta shape on [--min, --max]); joint: true "
    "cell shares, the first part slowest; multi_select: sets of items and their "
    "probabilities, such as a+b:0.3,a:0.2,none:0.5.",
)
@mechanism_options
@click.option("--repeats", type=int, default=1, show_default=True, help="Independent surveys.")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--method", type=click.Choice(list(METHODS)), default="clopper-pearson", show_default=True
)
@click.option("--seed", type=int, help="Seed for a reproducible run (seeded PCG64, not CSPRNG).")
@click.option(
    "--transport",
    type=click.Choice(["grpc", "inprocess"]),
    default="grpc",
    show_default=True,
    help="grpc: submit through an aggregator daemon; inprocess: estimate in this process.",
)
@click.option(
    "--server",
    metavar="HOST:PORT",
    callback=check_server,
    help="With --transport grpc: an existing daemon HOST:PORT (needs the admin token). "
    "Default: an embedded daemon on 127.0.0.1 with a temporary SQLite database.",
)
@client_tls_options(None)
@admin_token_file_option(None)
@click.option("--batch-size", type=int, default=1000, show_default=True, help="Reports per RPC.")
@click.option(
    "--compare-central",
    is_flag=True,
    help="binary: compare local randomized response with a trusted curator's Laplace count "
    "at the same epsilon, at --participants and its tenths down to 10 "
    f"(in-process; {DEFAULT_REPEATS} repeats unless --repeats is given).",
)
@click.option(
    "--epsilons",
    metavar="E1,E2,...",
    help="binary, categorical, numeric: sweep these epsilons (increasing; default with --plot "
    f"{','.join(f'{e:g}' for e in DEFAULT_EPSILONS)}), in process, every --mechanism given "
    "(comma-separated; default every mechanism of the type), "
    f"{DEFAULT_REPEATS} repeats each unless --repeats is given: RMSE, mean CI width and "
    "coverage per point.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw the sweep over --epsilons (accuracy, and coverage with its binomial band) to "
    "FILE (.png, .svg or .pdf); with --compare-central the errors against n. "
    "Needs the plot extra.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@overflow_is_invalid_input
def simulate_command(
    participants: int,
    share: float | None,
    distribution: str | None,
    repeats: int,
    confidence: float,
    method: str,
    seed: int | None,
    transport: str,
    server: str | None,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    batch_size: int,
    compare_central: bool,
    epsilons: str | None,
    plot: Path | None,
    as_json: bool,
    **question: Any,
) -> None:
    """Simulate a survey of a population whose true answers you choose.

    --type binary (default): a yes/no question with true share --p. --type categorical:
    --options K (or names) with true shares --distribution. --type numeric: values on
    [--min, --max] drawn from --distribution. --type joint: parts given by --part (once
    per part, in order) answered in one report, with true cell shares --distribution (the
    first part slowest), so the parts are as correlated as you choose; it reports the
    coverage of the cross-tab's, the marginals' and the correlations' intervals. --type
    multi_select: --options items, each participant's set drawn from --distribution (sets
    and probabilities, so any correlation between items), at --epsilon in total; coverage
    of item shares, pairs and conditional shares. Each simulated participant randomizes
    their answer with the client library (OS CSPRNG unless --seed is given). The reports
    go by default over gRPC to an embedded aggregator daemon (127.0.0.1, OS-chosen port,
    temporary SQLite database), or to --server, which stores them and returns the
    estimate; --transport inprocess skips the network; --tls-ca (and --tls-cert, --tls-key)
    connect to --server over TLS. With --repeats > 1 it reports the intervals'
    empirical coverage and the spread of the estimates beside theory. When stderr is a
    terminal, a progress bar there shows the reports sent over gRPC (with --repeats > 1,
    the repeats done) with their rate and ETA; off a terminal or with --json, none.

    The question is given as `survey create` takes it: --spec FILE (one question's entry,
    or a survey spec and --question ID), or --type and the options that describe it.

    --compare-central runs the same population, at the same epsilon, through local
    randomized response and through a central discrete Laplace count of a trusted curator
    who holds the raw answers, and prints the error of each as n grows (local ~ 1/sqrt(n),
    central ~ 1/n).

    --epsilons (and --plot FILE without --compare-central) sweeps epsilon for --type
    binary, categorical or numeric: at each epsilon, every mechanism given by --mechanism
    (comma-separated; default all of the type) runs --repeats surveys in process, and it
    prints each point's RMSE, mean interval width and empirical coverage, with the exact
    binomial band a correct interval's coverage falls in; --plot draws them.
    """
    if compare_central:
        reject_options("binary with --compare-central", ["epsilons", "spec_file"])
        kind = str(question["question_type"])
        if kind not in analyses() or not analyses()[kind].compares_central:
            raise click.UsageError("--compare-central applies to --type binary")
        reject_options(
            "binary with --compare-central",
            ["options", "lo", "hi", "distribution", "transport", "server", "tls_ca", "tls_cert",
             "tls_key", "admin_token_file", "batch_size", "parts"],
        )  # fmt: skip
        compared = QuestionInputs(question)
        if not compared.analysis.compares_central:
            raise click.UsageError(
                f"--compare-central applies to --type binary, not {compared.kind}"
            )
        if share is None:
            raise click.UsageError("--compare-central needs --p (the true yes-share)")
        context = click.get_current_context()
        given = context.get_parameter_source("repeats") != ParameterSource.DEFAULT
        compare_command_line(
            share, compared.mechanism, participants,
            repeats=repeats if given else DEFAULT_REPEATS, confidence=confidence, method=method,
            seed=seed, plot=plot, as_json=as_json,
        )  # fmt: skip
        return
    request = SimulationRequest(
        participants=participants, share=share, distribution=distribution, repeats=repeats,
        confidence=confidence, method=method, seed=seed,
    )  # fmt: skip
    if epsilons is not None or plot is not None:
        swept = replace(request, repeats=default_repeats(repeats))
        sweep_command_line(question, swept, epsilons, plot=plot, as_json=as_json)
        return
    asked = QuestionInputs(question)
    analysis = asked.analysis
    asked.reject_inputs(analysis.simulate_inputs, ["share", "distribution", "method"], "")
    if transport == "inprocess" and server is not None:
        raise click.UsageError("--server needs --transport grpc")
    token = read_token(admin_token_file) if server is not None else None
    with user_errors():  # everything is checked before a progress bar starts
        as_count("participants", participants, minimum=1)
        as_count("repeats", repeats, minimum=1)
        check_open_unit("confidence", confidence)
        check_method(method)
        simulation = analysis.simulation(asked.question, asked.mechanism, request)
    with ExitStack() as stack:
        stack.enter_context(user_errors())
        stack.enter_context(remote_errors(server or "the embedded aggregator"))
        sent, repeated = simulation_progress(
            stack, grpc=transport == "grpc", participants=participants, repeats=repeats,
            as_json=as_json,
        )  # fmt: skip
        outcome = simulation.run(
            Transport(
                stack, grpc=transport == "grpc", server=server, admin_token=token,
                batch_size=batch_size, tls=tls, sent=sent, repeated=repeated,
            )
        )  # fmt: skip
    if as_json:
        emit_json(outcome.document)
    else:
        outcome.show(click.echo)
