"""What the ``curate`` subcommands share: options, the data, the budget spend, the output."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import PREFIX, emit_json, fail
from deniable.shared.sampling import ByteSource, source_for

F = TypeVar("F", bound=Callable[..., Any])

BUDGET_EXIT = 5
"""Exit code of a query the budget refuses (as every refusal of the tools: 5)."""

NEIGHBOURS_HELP = (
    "Neighbouring data sets: add-remove (one row added or removed: the row count is then "
    "private) or replace (one row changed: the row count is public). A histogram's "
    "sensitivity is 1 under add-remove, 2 under replace. The default, add-remove, protects "
    "whether a person is in the data at all."
)

SEED_HELP = (
    "NOT PRIVATE: seeded noise, for tests and demonstrations only (anyone with the seed "
    "can recompute and subtract it). The answer is labelled not private and no ledger is "
    "read or written: no budget, no charge; `curate release` refuses it. Taken only from "
    "the command line: its variable is refused. Without it the OS CSPRNG draws the noise."
)

EXIT_CODES_HELP = """\b
Exit codes: 0 released, 2 invalid input (file, column, type, condition,
option), 5 refused by the privacy budget (nothing spent, no noise drawn)."""


@contextmanager
def curator_errors() -> Iterator[None]:
    """A refusal by the budget is exit 5; any other bad input one line and exit 2."""
    try:
        yield
    except curator.BudgetExceededError as error:
        fail(str(error), BUDGET_EXIT)
    except ValueError as error:
        fail(str(error), 2)


def data_argument(required: bool) -> Callable[[F], F]:
    """DATA.csv, a path (checked when read, so a missing file is one line naming it)."""
    return click.argument(
        "data",
        required=required,
        metavar="DATA.csv" if required else "[DATA.csv]",
        type=click.Path(dir_okay=False, path_type=Path),
    )


def ledger_option(function: F) -> F:
    """``--ledger PATH``: one variable for every curate subcommand."""
    return click.option(
        "--ledger",
        envvar=f"{PREFIX}_CURATOR_LEDGER",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The privacy-budget ledger, a SQLite file "
        "(default: $XDG_DATA_HOME/deniable/curator-ledger.sqlite, XDG_DATA_HOME "
        "defaulting to ~/.local/share).",
    )(function)


def spend_options(function: F) -> F:
    """``--epsilon``, ``--budget``, ``--ledger``, ``--neighbours``, ``--max-rows``, ``--seed``."""
    for option in reversed(
        [
            click.option("--epsilon", type=float, help="ε this query spends, in [2^-20, 50]."),
            click.option(
                "--budget",
                type=float,
                help="Total ε of this data set, set by its first query (then optional; it "
                "cannot change).",
            ),
            ledger_option,
            click.option(
                "--neighbours",
                type=click.Choice(curator.NEIGHBOURS),
                default="add-remove",
                show_default=True,
                help=NEIGHBOURS_HELP,
            ),
            click.option(
                "--max-rows",
                type=int,
                help="A public upper bound on the row count, the upper clamp of counts under "
                "add-remove (under replace the row count itself is public and used).",
            ),
            click.option("--seed", type=int, help=SEED_HELP),
        ]
    ):
        function = option(function)
    return function


def query_options(function: F) -> F:
    """``--where``, ``--types``, ``--confidence``, ``--from-release``, ``--json``."""
    for option in reversed(
        [
            click.option(
                "--where",
                help="Keep the rows matching a condition, e.g. \"age >= 30 and (dept = 'HR' "
                "or not remote = 'yes')\": comparisons = != < <= > >= of a column with a "
                "number or a 'string', joined by and/or/not and parentheses.",
            ),
            click.option(
                "--types",
                help="Declare column types, e.g. age=int,dept=str (int, float or str); "
                "others are inferred: int if every cell is, else float, else str.",
            ),
            click.option("--confidence", type=float, default=0.95, show_default=True),
            click.option(
                "--from-release",
                type=click.Path(dir_okay=False, path_type=Path),
                help="Answer from a file of `curate release` instead of DATA.csv: "
                "post-processing, no privacy cost.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print one JSON document."),
        ]
    ):
        function = option(function)
    return function


def read_table(data: Path | None, types: str | None) -> curator.Table:
    """The data file's table; a missing or unreadable file is an error naming it."""
    if data is None:
        raise curator.CuratorError("give DATA.csv, or --from-release FILE")
    if not data.is_file():
        raise curator.CuratorError(f"DATA.csv: no file {str(data)!r}")
    return curator.load_table(data, curator.parse_types(types))


def byte_source(seed: int | None) -> ByteSource:
    """The OS CSPRNG, or a seeded generator when ``--seed`` is given."""
    import numpy as np  # only when a query runs: --help stays light

    return source_for(None if seed is None else np.random.default_rng(seed))


def check_mode(data: Path | None, release: Path | None, options: dict[str, Any]) -> None:
    """DATA.csv with a budget, or --from-release without one; never both."""
    if release is None:
        if options.get("epsilon") is None:
            raise curator.CuratorError("--epsilon is required (the ε this query spends)")
        return
    if data is not None:
        raise curator.CuratorError(
            "give DATA.csv or --from-release, not both (a release answers without the data)"
        )
    given = [f"--{name.replace('_', '-')}" for name, value in options.items() if value is not None]
    if given:
        raise curator.CuratorError(
            f"{', '.join(given)}: not used with --from-release (it spends nothing)"
        )


def check_before_spending(
    table: curator.Table, confidence: float, neighbours: str, max_rows: int | None
) -> None:
    """Every option a query checks, checked before the ledger is touched."""
    if not 0 < confidence < 1:
        raise curator.CuratorError(f"--confidence must be in (0, 1), got {confidence!r}")
    if max_rows is not None:
        if neighbours == "replace":
            raise curator.CuratorError(
                "--max-rows is for --neighbours add-remove (under replace the row count is public)"
            )
        if max_rows < len(table.rows):
            raise curator.CuratorError(f"--max-rows {max_rows} is below the table's row count")


def spend(
    table: curator.Table,
    ledger: Path | None,
    epsilon: float,
    budget: float | None,
    query: str,
) -> dict[str, Any]:
    """Record the spend BEFORE any noise is drawn (refused: exit 5, ledger unchanged)."""
    path = ledger or curator.default_ledger_path()
    after = curator.Ledger(path).spend(table.digest, epsilon, query, budget)
    return {
        "cost": epsilon,
        "budget": after.total,
        "spent": after.spent,
        "remaining": after.remaining,
        "data_sha256": table.digest,
        "ledger": str(path),
    }


def check_seed(seed: int | None, *, release: bool = False) -> None:
    """A seed only from the command line, and never with a ledger or a budget.

    Seeded noise is not private: a seeded query must not be charged to a ledger (which
    would then vouch for an ε that anyone with the seed can undo), nor come from a variable
    left set in the environment, where it would turn the curator's queries non-private
    without a word on their command line.
    """
    if seed is None:
        return
    context = click.get_current_context()
    if context.get_parameter_source("seed") is not ParameterSource.COMMANDLINE:
        variable = next(p.envvar for p in context.command.params if p.name == "seed")
        raise curator.CuratorError(
            f"{variable} is set: seeded noise is not private, so a seed is taken only from "
            "the command line (--seed); unset the variable"
        )
    for name in () if release else ("budget", "ledger"):
        if context.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            raise curator.CuratorError(
                f"--{name}: not used with --seed (seeded noise is not private: a seeded "
                "query reads and writes no ledger and spends no budget)"
            )


def charge(
    table: curator.Table,
    ledger: Path | None,
    epsilon: float,
    budget: float | None,
    query: str,
    seed: int | None,
) -> dict[str, Any]:
    """The privacy record of a query on the data: ε spent, or with a seed no ledger at all."""
    check_seed(seed)
    if seed is None:
        return spend(table, ledger, epsilon, budget, query)
    return {
        "private": False,
        "seed": seed,
        "cost": None,
        "budget": None,
        "spent": None,
        "remaining": None,
        "data_sha256": table.digest,
        "ledger": None,
    }


def privacy_line(privacy: dict[str, Any]) -> str:
    """One line on what the answer cost."""
    if privacy.get("private") is False:
        return (
            f"Privacy: none: seeded noise (--seed {privacy['seed']}); no ledger was read or "
            "written, no ε charged. Do not publish this answer"
        )
    if privacy["cost"] == 0:
        return (
            f"Privacy: no cost: post-processing of the release {privacy['release']} "
            f"(which spent ε = {privacy['release_epsilon']:g} once)"
        )
    return (
        f"Privacy: spent ε = {privacy['cost']:g} of the budget {privacy['budget']:g} "
        f"({privacy['spent']:g} spent, {privacy['remaining']:g} left) in {privacy['ledger']}"
    )


def release_privacy(path: Path, release: curator.Release) -> dict[str, Any]:
    """The privacy record of an answer from a release: no cost."""
    return {
        "cost": 0,
        "post_processing": True,
        "release": str(path),
        "release_epsilon": release.epsilon,
    }


def not_private_line(seed: int) -> str:
    """The first line of a seeded answer's output."""
    return (
        f"NOT PRIVATE: seeded noise (--seed {seed}), reproducible by anyone with the seed; "
        "for tests and demonstrations only, charged to no ledger"
    )


def emit(document: dict[str, Any], lines: list[str], as_json: bool) -> None:
    """One JSON document (``private`` added), or the text lines; a seeded one says so first."""
    privacy = document["privacy"]
    private = privacy.get("private", True)
    if not private:
        lines = [not_private_line(privacy["seed"]), *lines]
    if as_json:
        if not private:
            click.echo(lines[0], err=True)
        emit_json({**document, "private": private})
    else:
        for line in lines:
            click.echo(line)


def percent(confidence: float) -> str:
    """0.95 as ``95%``."""
    return f"{100 * confidence:g}%"
