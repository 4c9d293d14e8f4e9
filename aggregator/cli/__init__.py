"""The ``deniable-aggregator`` command: analyst, simulation and planning tools."""

from __future__ import annotations

import importlib

import click

import deniable.client._grpc_env  # noqa: F401  (before grpc is imported)

__all__ = ["cli", "main"]

# Each command's module and object, imported only when the command runs (or for the
# command list in --help): each command then loads only what it needs, and the one
# that computes statistics is the one that pays for scipy.
_COMMANDS = {
    "plan": ("deniable.aggregator.cli._plan", "plan_command"),
    "serve": ("deniable.aggregator.cli._serve", "serve_command"),
    "simulate": ("deniable.aggregator.cli._simulate", "simulate_command"),
    "survey": ("deniable.aggregator.cli._survey", "survey_group"),
    "estimate": ("deniable.aggregator.cli._estimate", "estimate_command"),
    "check": ("deniable.aggregator.cli._check", "check_command"),
}


class _LazyGroup(click.Group):
    """A command group that imports a command's module the first time it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            module, name = _COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


def main() -> None:
    """Console-script entry point."""
    cli(auto_envvar_prefix="DENIABLE")
