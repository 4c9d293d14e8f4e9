"""``deniable-aggregator simulate --type categorical|numeric``: runs and readable tables."""

from __future__ import annotations

import math
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from deniable.aggregator.analysis._distributions import (
    NumericDistribution,
    check_shares,
    parse_shares,
)
from deniable.aggregator.analysis._simulate_anytime import looks_line
from deniable.aggregator.analysis._simulate_categorical import (
    CategoricalSimulation,
    simulate_categorical,
)
from deniable.aggregator.analysis._simulate_grpc import GrpcTransport
from deniable.aggregator.analysis._simulate_grpc_kinds import (
    CategoricalGrpcSubmitter,
    NumericGrpcSubmitter,
    categorical_grpc_submitter,
    numeric_grpc_submitter,
)
from deniable.aggregator.analysis._simulate_numeric import NumericSimulation, simulate_numeric
from deniable.aggregator.cli._common import (
    emit_json,
    read_token,
    remote_errors,
    transport_line,
    user_errors,
)
from deniable.aggregator.cli._kinds import (
    categorical_inputs,
    mechanism_summary,
    numeric_inputs,
    reject_options,
)
from deniable.aggregator.cli._progress import simulation_progress
from deniable.shared._validate import as_count, check_open_unit
from deniable.shared.questions import categorical_mechanism, numeric_mechanism
from deniable.shared.stats import ESTIMANDS, check_method
from deniable.shared.transport import TlsConfig

__all__ = ["simulate_kind"]


def simulate_kind(
    question_type: str,
    *,
    participants: int,
    options: str | None,
    mechanism: str | None,
    lo: float | None,
    hi: float | None,
    distribution: str | None,
    alpha: float | None,
    epsilon: float | None,
    repeats: int,
    confidence: float,
    method: str,
    seed: int | None,
    transport: str,
    server: str | None,
    admin_token_file: Path | None,
    batch_size: int,
    as_json: bool,
    tls: TlsConfig | None = None,
) -> None:
    """Simulate a categorical or numeric question, over gRPC or in process, and print it."""
    if question_type == "categorical":
        reject_options(question_type, ["share", "lo", "hi"])
        names, kind = categorical_inputs(options, mechanism, epsilon, alpha)
    else:
        reject_options(question_type, ["share", "options", "alpha", "method"])
        low, high, kind, eps = numeric_inputs(lo, hi, mechanism, epsilon)
    if distribution is None:
        example = "0.5,0.3,0.2" if question_type == "categorical" else "uniform"
        raise click.UsageError(f"--type {question_type} needs --distribution (e.g. {example})")
    if transport == "inprocess" and server is not None:
        raise click.UsageError("--server needs --transport grpc")
    token = read_token(admin_token_file) if server is not None else None
    with user_errors():  # everything is checked before the progress bar starts
        as_count("participants", participants, minimum=1)
        as_count("repeats", repeats, minimum=1)
        check_open_unit("confidence", confidence)
        check_method(method)
        if question_type == "categorical":
            shares = check_shares(parse_shares(distribution), len(names))
            categorical = categorical_mechanism(kind, len(names), epsilon, alpha)
        else:
            values = NumericDistribution.parse(distribution)
            numeric = numeric_mechanism(kind, low, high, eps)
            values.check_range(numeric.lo, numeric.hi)
    connection: dict[str, Any] = {
        "confidence": confidence, "server": server, "admin_token": token, "batch_size": batch_size,
        "tls": tls,
    }  # fmt: skip
    grpc: GrpcTransport | None = None
    with ExitStack() as stack:
        stack.enter_context(user_errors())
        stack.enter_context(remote_errors(server or "the embedded aggregator"))
        connection["progress"], repeated = simulation_progress(
            stack, grpc=transport == "grpc", participants=participants, repeats=repeats,
            as_json=as_json,
        )  # fmt: skip
        result: CategoricalSimulation | NumericSimulation
        if question_type == "categorical":
            categorical_grpc: CategoricalGrpcSubmitter | None = None
            if transport == "grpc":
                categorical_grpc = grpc = stack.enter_context(
                    categorical_grpc_submitter(
                        categorical, options=names, method=method, **connection
                    )
                )
            result = simulate_categorical(
                participants, shares, categorical, options=names, repeats=repeats,
                confidence=confidence, method=method, seed=seed, progress=repeated,
                submit=categorical_grpc,
            )  # fmt: skip
        else:
            numeric_grpc: NumericGrpcSubmitter | None = None
            if transport == "grpc":
                numeric_grpc = grpc = stack.enter_context(
                    numeric_grpc_submitter(numeric, **connection)
                )
            result = simulate_numeric(
                participants, values, numeric, repeats=repeats, confidence=confidence,
                seed=seed, progress=repeated, submit=numeric_grpc,
            )  # fmt: skip
    grpc_info = grpc.summary() if grpc is not None else None
    if as_json:
        emit_json({"type": question_type, **result.to_dict(), "grpc": grpc_info})
    elif isinstance(result, CategoricalSimulation):
        _print_categorical(result, grpc_info)
    else:
        _print_numeric(result, grpc_info)


def _privacy(epsilon: float) -> str:
    if epsilon == float("inf"):
        return "Privacy: none (alpha = 1, epsilon = infinity)"
    return f"Privacy: epsilon = {epsilon:.4f} per answer (exact)"


def _ratio(empirical: float, theory: float) -> str:
    return f"{empirical / theory:.3f}" if theory > 0 else "-"


def _print_categorical(result: CategoricalSimulation, grpc_info: dict[str, Any] | None) -> None:
    first, rows = result.first, result.per_option
    click.echo(
        f"Simulated {result.participants:,} participants choosing among {len(rows)} options "
        f"(randomness: {result.randomness})"
    )
    click.echo(f"Mechanism: {mechanism_summary(result.mechanism)}")
    click.echo(_privacy(first.epsilon))
    width = max(6, *(len(name) for name in result.options))
    click.echo(
        f"  {'option':<{width}} {'true':>7} {'sample':>7} {'estimate':>9} {'raw':>8} "
        f"{'std err':>8}  {first.confidence:.0%} CI"
    )
    for v, row in enumerate(rows):
        click.echo(
            f"  {row.option:<{width}} {row.share:>7.4f} {row.sample_share:>7.4f} "
            f"{first.estimate[v]:>9.4f} {first.estimate_raw[v]:>8.4f} {first.std_error[v]:>8.4f}"
            f"  [{first.ci_low[v]:.4f}, {first.ci_high[v]:.4f}]"
        )
    click.echo(
        f"Intervals: {first.method}, one per option (not simultaneous), each containing its "
        f"estimate; estimand: {ESTIMANDS[first.estimand]}; estimate = raw estimates projected "
        "onto the simplex"
    )
    if result.repeats > 1:
        _print_option_repeats(result, width, in_process=grpc_info is None)
    if grpc_info is not None:
        click.echo(transport_line(grpc_info, "the estimates above were"))


def _print_option_repeats(result: CategoricalSimulation, width: int, in_process: bool) -> None:
    first, rows = result.first, result.per_option
    click.echo(f"Over {result.repeats:,} repeats (theory: the mechanism's variance at the truth):")
    click.echo(
        f"  {'option':<{width}} {'coverage ± MC SE':>17} {'exact':>7} {'mean raw':>9} "
        f"{'std raw':>8} {'theory':>8} {'var/theory':>10}"
    )
    for row in rows:
        assert row.coverage is not None
        assert row.coverage_se is not None
        assert row.variance_empirical is not None
        assert row.std_estimate_raw is not None
        ratio = _ratio(row.variance_empirical, row.variance_theory)
        click.echo(
            f"  {row.option:<{width}} {row.coverage:>8.4f} ± {row.coverage_se:.4f} "
            f"{row.coverage_exact:>7.4f} {row.mean_estimate_raw:>9.4f} "
            f"{row.std_estimate_raw:>8.4f} {row.std_theory:>8.4f} {ratio:>10}"
        )
    click.echo(looks_line(result.looks, first.confidence, "an option's interval (the worst)"))
    tail = (
        f"  nominal coverage {first.confidence:g}; exact: summed over the binomial pmf "
        "(before widening to the estimate, so a lower bound)"
    )
    if in_process:
        tail += f"; throughput {result.reports_per_second:,.0f} reports/s in-process"
    click.echo(tail)
    _print_all_at_once(result)


def _print_all_at_once(result: CategoricalSimulation) -> None:
    """How often every option was covered at once: per-option vs simultaneous intervals."""
    if result.joint_coverage is None or result.simultaneous_coverage is None:
        return
    k = len(result.per_option)
    click.echo(
        f"All {k} options covered at once: per-option intervals {result.joint_coverage:.4f} "
        f"± {result.joint_coverage_se:.4f}; simultaneous intervals (--simultaneous) "
        f"{result.simultaneous_coverage:.4f} ± {result.simultaneous_coverage_se:.4f} "
        f"(mean width {math.fsum(result.simultaneous_mean_width) / k:.4f})"
    )


def _print_numeric(result: NumericSimulation, grpc_info: dict[str, Any] | None) -> None:
    first = result.first
    click.echo(
        f"Simulated {result.participants:,} participants with values on "
        f"[{first.lo:g}, {first.hi:g}] from {result.distribution} (true mean "
        f"{result.true_mean:.6g}, sample mean {result.sample_mean:.6g}; "
        f"randomness: {result.randomness})"
    )
    click.echo(f"Mechanism: {mechanism_summary(result.mechanism)}")
    click.echo(_privacy(first.epsilon))
    click.echo(
        f"Estimate: {first.estimate:.6g}  (unbiased raw {first.estimate_raw:.6g}, std error "
        f"{first.std_error:.4g}; worst case over distributions {first.std_error_worst:.4g})"
    )
    click.echo(
        f"{first.confidence:.0%} CI: [{first.ci_low:.6g}, {first.ci_high:.6g}]  "
        f"({first.method} interval: {first.coverage}; estimand: {first.estimand})"
    )
    if result.repeats > 1:
        _print_numeric_repeats(result, in_process=grpc_info is None)
    if grpc_info is not None:
        click.echo(transport_line(grpc_info))


def _print_numeric_repeats(result: NumericSimulation, in_process: bool) -> None:
    first = result.first
    assert result.coverage is not None
    assert result.coverage_se is not None
    assert result.variance_empirical is not None
    assert result.std_estimate_raw is not None
    ratio = _ratio(result.variance_empirical, result.variance_theory)
    methods = ", ".join(f"{name} {count:,}" for name, count in result.methods.items())
    rows = [
        ("CI coverage", f"{result.coverage:.4f} ± {result.coverage_se:.4f} (MC SE)",
         f"{first.confidence:g} (nominal)"),
        ("CI method", methods, ""),
        ("mean estimate", f"{result.mean_estimate_raw:.6g}", f"{result.true_mean:.6g} (truth)"),
        ("std of estimate", f"{result.std_estimate_raw:.4g}", f"{result.std_theory:.4g}"),
        ("variance", f"{result.variance_empirical:.4g}",
         f"{result.variance_theory:.4g} (ratio {ratio})"),
        ("mean CI width", f"{result.mean_width:.4g}", ""),
    ]  # fmt: skip
    click.echo(f"Over {result.repeats:,} repeats:")
    click.echo(f"  {'':<16} {'empirical':<28} theory")
    for label, empirical, theory in rows:
        click.echo(f"  {label:<16} {empirical:<28} {theory}".rstrip())
    click.echo(looks_line(result.looks, first.confidence))
    if in_process:
        click.echo(f"  throughput: {result.reports_per_second:,.0f} reports/s in-process")
