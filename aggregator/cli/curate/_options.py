"""What the ``curate`` query commands share: their options, the session, errors, output."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import emit_json
from deniable.aggregator.cli.curate._dataset import dataset_options, open_service
from deniable.aggregator.cli.curate._session import (
    LocalSession,
    RemoteSession,
    Session,
    analyst_token,
    local_only,
    remote_options,
)
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = [
    "EXIT_CODES_HELP",
    "analyst_options",
    "check_seed_source",
    "emit",
    "open_session",
    "percent",
    "query_options_message",
    "session_options",
]

F = TypeVar("F", bound=Callable[..., Any])


SEED_HELP = (
    "NOT PRIVATE: seeded noise, for tests and demonstrations only (anyone with the seed "
    "can recompute and subtract it). Only in-process (a daemon never seeds its noise); the "
    "answer is labelled not private and charged to no ledger. Taken only from the command "
    "line."
)

EXIT_CODES_HELP = """\b
Exit codes: 0 released, 2 invalid input (source, column, type, condition,
option), 3 daemon unreachable, 4 release not found, 5 refused by the privacy
budget (nothing spent, no noise drawn), 6 token refused."""

LOCAL_ONLY = (
    "table",
    "types",
    "dataset_name",
    "privacy_unit",
    "max_contributions",
    "neighbours",
    "budget",
    "delta",
    "database",
    "memory_limit",
    "temp_directory",
    "seed",
)


def session_options(function: F) -> F:
    """DATA (in-process, with the data set's options) or --server with a token; --json."""
    function = dataset_options(server=False)(function)
    function = remote_options(function)
    function = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(
        function
    )
    return click.argument(
        "data", required=False, metavar="[DATA]", type=click.Path(dir_okay=False, path_type=Path)
    )(function)


def analyst_options(function: F) -> F:
    """The session's options and a query's own: ε, condition, confidence, preview, seed."""
    function = session_options(function)
    for option in reversed(
        [
            click.option("--epsilon", type=float, help="ε this query spends, in [2^-20, 50]."),
            click.option(
                "--where",
                help='Keep the rows matching an SQL condition, e.g. "age >= 30 AND dept IN '
                "('HR', 'IT')\": columns, literals, comparisons, AND/OR/NOT, IN, BETWEEN, "
                "LIKE, IS NULL; nothing else (no functions, no subqueries).",
            ),
            click.option("--confidence", type=float, default=0.95, show_default=True),
            click.option(
                "--preview",
                is_flag=True,
                help="Only the interval's width the query would have: reads no data, draws "
                "no noise, spends nothing.",
            ),
            click.option(
                "--from-release",
                metavar="FILE|ID",
                help="Answer from a release (a file of `curate release --output`, or a "
                "release id stored with the custodian): post-processing, no privacy cost.",
            ),
            click.option("--seed", type=int, help=SEED_HELP),
        ]
    ):
        function = option(function)
    return function


def check_seed_source() -> None:
    """A seed only from the command line: a variable left set would seed queries unseen."""
    context = click.get_current_context()
    if context.get_parameter_source("seed") is not ParameterSource.COMMANDLINE:
        variable = next(
            (p.envvar for p in context.command.params if p.name == "seed"), "a variable"
        )
        raise curator.CuratorError(
            f"{variable} is set: seeded noise is not private, so a seed is taken only "
            "from the command line (--seed); unset the variable"
        )


def open_session(data: Path | None, options: Mapping[str, Any]) -> Session:
    """The daemon named by --server, or the in-process service over DATA."""
    server = options.get("server")
    seed = options.get("seed")
    if seed is not None:
        check_seed_source()
        context = click.get_current_context()
        for name in ("budget", "database"):
            if context.get_parameter_source(name) is ParameterSource.COMMANDLINE:
                flag = "--db" if name == "database" else "--budget"
                raise curator.CuratorError(
                    f"{flag}: not used with --seed (seeded noise is not private: a seeded "
                    "query reads and writes no ledger and spends no budget)"
                )
    if server:
        if data is not None:
            raise curator.CuratorError(
                "give DATA or --server, not both (the daemon holds the data set)"
            )
        local_only(options, LOCAL_ONLY)
        token = analyst_token(options.get("token_file"), options.get("token"))
        return RemoteSession(server, token, options.get("tls"))
    if data is None:
        raise curator.CuratorError(
            "give DATA (a file or postgresql:// URL you hold) or --server HOST:PORT "
            "(a curator daemon) with --token-file"
        )
    if options.get("token_file") or options.get("token"):
        raise curator.CuratorError("--token-file and --token: only with --server")
    service = open_service({**options, "data": data}, seeded=seed is not None)
    return LocalSession(service, seed)


def query_options_message(options: Mapping[str, Any]) -> pb.QueryOptions:
    """The request's common part from the command's options."""
    epsilon = options.get("epsilon")
    preview = bool(options.get("preview"))
    if epsilon is None:
        raise click.UsageError("--epsilon is required (the ε this query spends)")
    if preview and options.get("seed") is not None:
        raise click.UsageError("--preview draws no noise: --seed is not used")
    return pb.QueryOptions(
        epsilon=epsilon,
        confidence=options.get("confidence") or 0.95,
        where=options.get("where") or "",
        preview=preview,
    )


def not_private_line(seed: int) -> str:
    """The first line of a seeded answer's output."""
    return (
        f"NOT PRIVATE: seeded noise (--seed {seed}), reproducible by anyone with the seed; "
        "for tests and demonstrations only, charged to no ledger"
    )


def emit(document: dict[str, Any], lines: list[str], as_json: bool) -> None:
    """One JSON document (``private`` added), or the text lines; a seeded one says so first."""
    privacy = document.get("privacy") or {}
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
