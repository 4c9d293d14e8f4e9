"""``deniable-aggregator closeness``: ε- and (n, ε)-closeness of a generalized CSV table."""

from __future__ import annotations

from fractions import Fraction

import click

from deniable.aggregator.central.closeness import (
    DISTANCES,
    ClosenessReport,
    closeness,
    measure,
    n_closeness,
    parse_epsilon,
    read_table,
)
from deniable.aggregator.cli._common import emit_json, fail


@click.command("closeness")
@click.argument("data", metavar="DATA.csv")
@click.option("--sensitive", required=True, help="The sensitive column.")
@click.option(
    "--quasi",
    required=True,
    metavar="COL[,COL...]",
    help="Quasi-identifier columns, comma-separated: rows equal in all of them form a class.",
)
@click.option(
    "--distance",
    type=click.Choice(list(DISTANCES)),
    default="variational",
    show_default=True,
    help="Distance between a class's distribution and the reference one.",
)
@click.option(
    "--epsilon",
    metavar="E",
    help="Threshold: a decimal (0.2) or a fraction (4/9); in [0, 1] for variational, "
    "[0, 2] for l1, [0, sqrt(2)] for l2, any value >= 0 for kl.",
)
@click.option(
    "--n",
    "n",
    type=int,
    help="Decide (n, ε)-closeness: is there a set M of at least N rows of the table that "
    "every class is within ε of? Needs --epsilon.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def closeness_command(
    data: str,
    sensitive: str,
    quasi: str,
    distance: str,
    epsilon: str | None,
    n: int | None,
    as_json: bool,
) -> None:
    """Audit a generalized CSV table for closeness of its classes.

    Rows with equal values (as written) in every --quasi column form an equivalence class.
    For each class L it prints the distance D(P_L, P_Q) between the distribution of the
    --sensitive column in L and in the whole table, and the largest distance; with
    --epsilon, whether the table is ε-close (every class within ε). Variational and L1
    distances are exact fractions (4/9); L2 is compared with ε exactly through its square;
    KL is in bits, in floating point.

    With --n N it decides (n, ε)-closeness: whether some set M of at least N rows of the
    table (any rows: only its counts per sensitive value matter) has every class within ε
    of P_Q|M, and shows one M. Variational and L1: an exact integer program. L2 and KL:
    exhaustive search when the table is small, otherwise bounds through the variational
    distance, which may leave the answer undecided (the output says which: "method").

    \b
    Exit codes: 0 the report is printed and, with --epsilon, the table is ε-close (with
    --n: (n, ε)-close); 1 with --epsilon, it is not (a class exceeds ε, no M exists, or
    L2/KL bounds could not decide), or the integer program failed; 2 invalid input:
    unreadable or malformed CSV, unknown column, empty table, bad distance, ε out of
    range, N outside [1, rows].
    """
    try:
        measured = measure(distance)
        threshold = None if epsilon is None else parse_epsilon(epsilon)
        if n is not None and threshold is None:
            raise ValueError("--n needs --epsilon (the ε of (n, ε)-closeness)")
        columns = [column.strip() for column in quasi.split(",")]
        report = closeness(read_table(data), sensitive, columns, measured, threshold)
        found = None if n is None or threshold is None else n_closeness(report, n, threshold)
    except ValueError as error:
        fail(str(error), 2)
    except RuntimeError as error:  # the solver failed: not the input's fault
        fail(str(error), 1)
    if as_json:
        searched = None if found is None else found.to_dict(report.values)
        emit_json({**report.to_dict(), "n_closeness": searched})
    else:
        _print(report)
        if found is not None:
            click.echo("")
            answer = {True: "yes", False: "no", None: "undecided"}[found.answer]
            exactness = "exact" if found.exact else "not decided"
            click.echo(
                f"(n, epsilon)-closeness with n = {found.n}, epsilon = {found.epsilon}: "
                f"{answer} ({exactness}; method {found.method})"
            )
            if found.witness is not None:
                counts = ", ".join(
                    f"{value} {count}"
                    for value, count in zip(report.values, found.witness, strict=True)
                )
                click.echo(f"  Reference set M of {sum(found.witness)} rows: {counts}")
                distances = ", ".join(f"{value:.4f}" for value in found.distances or ())
                click.echo(f"  Class distances to P_Q|M: {distances}")
    verdict = report.close if found is None else found.answer
    if verdict is False or (found is not None and verdict is None):
        raise click.exceptions.Exit(1)


def _shown(value: float, exact: Fraction | None) -> str:
    return f"{value:.4f}" if exact is None else f"{exact} = {value:.4f}"


def _print(report: ClosenessReport) -> None:
    """The report as a table, one line per class."""
    click.echo(
        f"Closeness of {report.path}: {report.rows} rows, {len(report.classes)} classes; "
        f"sensitive {report.sensitive} ({len(report.values)} values), "
        f"quasi-identifiers {', '.join(report.quasi)}"
    )
    click.echo(f"Distance: {report.distance.name} = {report.distance.formula}")
    whole = ", ".join(
        f"{value} {count} ({Fraction(count, report.rows)})"
        for value, count in zip(report.values, report.counts, strict=True)
    )
    click.echo(f"Whole table P_Q: {whole}")
    header = [*report.quasi, "size", "distance"]
    if report.epsilon is not None:
        header.append(f"<= {report.epsilon}")
    lines = [header]
    for group in report.classes:
        line = [*group.quasi, str(group.size), _shown(group.distance, group.exact)]
        if report.epsilon is not None:
            line.append("yes" if report.within(group) else "NO")
        lines.append(line)
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    click.echo("")
    for line in lines:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
    largest = report.largest
    where = ", ".join(
        f"{column} {value}" for column, value in zip(report.quasi, largest.quasi, strict=True)
    )
    click.echo("")
    click.echo(f"Largest distance: {_shown(largest.distance, largest.exact)} ({where})")
    if report.epsilon is None:
        click.echo(
            f"The table is epsilon-close exactly for epsilon >= "
            f"{_shown(largest.distance, largest.exact)}."
        )
    else:
        outside = sum(1 for group in report.classes if not report.within(group))
        if report.close:
            click.echo(f"The table is {report.epsilon}-close: every class is within it.")
        else:
            click.echo(
                f"The table is not {report.epsilon}-close: {outside} of "
                f"{len(report.classes)} classes exceed it."
            )
