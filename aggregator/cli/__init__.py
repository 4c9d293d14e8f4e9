"""The ``deniable-aggregator`` command: analyst, simulation and planning tools."""

from __future__ import annotations

import click

import client._grpc_env  # noqa: F401  (before grpc is imported)
from aggregator.cli._check import check_command
from aggregator.cli._estimate import estimate_command
from aggregator.cli._plan import plan_command
from aggregator.cli._serve import serve_command
from aggregator.cli._simulate import simulate_command
from aggregator.cli._survey import survey_group

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deniable")
def cli() -> None:
    """Aggregate randomized survey answers into honest estimates.

    \b
    Environment: every option can also be set as DENIABLE_<COMMAND>_<OPTION>,
    for example DENIABLE_PLAN_EPSILON=1.
    Exit codes: 0 success, 1 runtime error, 2 invalid usage or input,
    3 aggregator unreachable, 4 survey or question not found, 5 survey closed or
    no reports yet, 6 admin token missing or wrong.
    """


cli.add_command(plan_command)
cli.add_command(serve_command)
cli.add_command(simulate_command)
cli.add_command(survey_group)
cli.add_command(estimate_command)
cli.add_command(check_command)


def main() -> None:
    """Console-script entry point."""
    cli(auto_envvar_prefix="DENIABLE")
