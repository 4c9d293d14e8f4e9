"""The ``deniable-aggregator`` command: analyst, simulation and planning tools."""

from __future__ import annotations

import sys

import click

import deniable.shared._grpc_env  # noqa: F401  (before grpc is imported)
from deniable.aggregator.cli._extra import INSTALL, missing_extra
from deniable.shared._cli import LazyGroup, run

__all__ = ["COMMANDS", "PREFIX", "RENAMED", "cli", "main"]

PREFIX = "DENIABLE_AGGREGATOR"  # as deniable.aggregator.cli._common.PREFIX (not imported here)

RENAMED = {
    flag: (f"DENIABLE_{flag}",)
    for flag in ("SERVER", "TLS_CA", "TLS_CERT", "TLS_KEY", "TLS_CLIENT_CA", "DB",
                 "MAX_MESSAGE_BYTES", "MAX_BATCH", "MAX_CONCURRENT_RPCS", "WORKERS")
}  # fmt: skip
"""Options whose variable 0.1.0 named without the prefix (a warning names the new one)."""

# Each command's module, object and short help: a command is imported only when it runs
# (``--help`` lists the short helps), so each command loads only what it needs, and the
# one that computes statistics is the one that pays for scipy.
COMMANDS = {
    "check": (
        "deniable.aggregator.cli._check",
        "check_command",
        "Check that every stored tally equals the one recomputed from the report log.",
    ),
    "closeness": (
        "deniable.aggregator.cli._closeness",
        "closeness_command",
        "Audit a generalized CSV table for closeness of its classes.",
    ),
    "curate": (
        "deniable.aggregator.cli.curate",
        "curate_group",
        "Central queries on data a custodian holds: Laplace noise of scale Δ/ε, a budget.",
    ),
    "estimate": (
        "deniable.aggregator.cli.estimate",
        "estimate_command",
        "Estimate each question of SURVEY_ID with a confidence interval.",
    ),
    "export": (
        "deniable.aggregator.cli.export",
        "export_command",
        "Export SURVEY_ID's estimates or stored reports as CSV, JSON or Parquet.",
    ),
    "migrate": (
        "deniable.aggregator.cli._migrate",
        "migrate_command",
        "Upgrade a database's schema (--db), or copy one database into another (--from, --to).",
    ),
    "plan": (
        "deniable.aggregator.cli.plan",
        "plan_command",
        "Plan a survey question: how many participants a margin of error needs.",
    ),
    "report": (
        "deniable.aggregator.cli._report",
        "report_command",
        "Write SURVEY_ID's estimates as one self-contained HTML page.",
    ),
    "serve": (
        "deniable.aggregator.cli._serve",
        "serve_command",
        "Run the aggregator daemon until SIGTERM or SIGINT.",
    ),
    "simulate": (
        "deniable.aggregator.cli.simulate",
        "simulate_command",
        "Simulate a survey of a population whose true answers you choose.",
    ),
    "synthesize": (
        "deniable.aggregator.cli._synthesize",
        "synthesize_command",
        "Write a synthetic CSV table sampled from SURVEY_ID's estimates (no privacy cost).",
    ),
    "survey": (
        "deniable.aggregator.cli.survey",
        "survey_group",
        "Create, list, show and close surveys on a running aggregator.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    env_prefix=PREFIX,
    renamed=RENAMED,
    logging_commands={"serve"},
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="deniable")
def cli() -> None:
    """Aggregate randomized survey answers into honest estimates.

    \b
    Environment: every option can also be set as
    DENIABLE_AGGREGATOR_<COMMAND>_<OPTION>, for example
    DENIABLE_AGGREGATOR_PLAN_EPSILON=1; a few shared by several commands have
    one name: DENIABLE_AGGREGATOR_SERVER, _TLS_CA, _TLS_CERT, _TLS_KEY,
    _ADMIN_TOKEN_FILE (or the token itself in DENIABLE_AGGREGATOR_ADMIN_TOKEN)
    and _DB. Each command's --help lists its variables. This program reads no
    other variable: the participant's DENIABLE_* ones are ignored.
    Exit codes: 0 success, 1 runtime error, 2 invalid usage or input (a missing
    admin token too), 3 aggregator unreachable, 4 survey or question not found,
    5 survey closed or no reports yet, 6 admin token refused.
    """


def main() -> None:
    """Console-script entry point: one line, exit code 1, if the aggregator extra is missing."""
    missing = missing_extra()
    if missing:
        click.echo(
            f"Error: deniable-aggregator needs {', '.join(missing)}, which this install lacks "
            f"(a participant-only install); install the aggregator with: {INSTALL}",
            err=True,
        )
        sys.exit(1)
    run(cli)
