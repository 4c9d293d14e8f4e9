"""What both command-line tools share: one-line errors, with the documented exit codes."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

import click

from deniable.shared.errors import DeniableError
from deniable.shared.text import visible

__all__ = [
    "ErrorMappingGroup",
    "HelpContext",
    "LazyGroup",
    "commands_of",
    "fail",
    "name_variables",
    "option_key",
    "options_of",
    "retired_variables",
    "run",
]

RETIRED_WARNINGS = "deniable.retired_variables"
"""``ctx.meta`` key: the retired-variable warnings a command logs itself (the daemon)."""


def run(group: click.Group) -> None:
    """Run a command-line tool: an error nobody foresaw is one line too (exit code 1).

    The tool's own errors already are (:class:`ErrorMappingGroup`, click's usage errors);
    anything else is a bug, reported as ``Error: unexpected TYPE: message`` rather than a
    traceback. (Calling the group itself, ``cli()``, shows the traceback.)
    """
    try:
        group.main(standalone_mode=True)
    except Exception as error:
        click.echo(
            f"Error: unexpected {type(error).__name__}: {' '.join(str(error).split())} "
            "(a bug in deniable: please report it with the command that caused it)",
            err=True,
        )
        sys.exit(1)


def fail(message: str, exit_code: int) -> click.exceptions.Exit:
    """Print ``Error: message`` (one line) on stderr; the exit to raise with ``exit_code``.

    Messages may quote what a server sent: control characters are shown as escapes.
    """
    click.echo(f"Error: {visible(' '.join(message.split()))}", err=True)
    return click.exceptions.Exit(exit_code)


class ErrorMappingGroup(click.Group):
    """A command group that turns a :class:`DeniableError` into one line and its exit code.

    The library raises its errors without knowing about the command line; this is the one
    place where they become ``Error: ...`` on stderr and the exit code of their status
    (:data:`deniable.shared.errors.EXIT_CODES`), with no traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DeniableError as error:
            raise fail(error.message, error.exit_code) from None


def option_key(option: click.Option) -> str:
    """An option's long flag as a variable name part: ``--max-batch`` is ``MAX_BATCH``."""
    return _upper(max(option.opts, key=len).lstrip("-"))


def _upper(name: str) -> str:
    return name.upper().replace("-", "_")


def commands_of(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    """``command`` and its subcommands, each with its path (``SURVEY_CREATE``)."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands_of(sub, f"{path}_{_upper(name)}")


def options_of(command: click.Command, path: str) -> Iterator[tuple[str, click.Option]]:
    """Each option of ``command`` and its subcommands, with its command's path.

    ``--help`` and ``--version`` (which take no value) are left out.
    """
    for command_path, each in commands_of(command, path):
        for param in each.params:
            if isinstance(param, click.Option) and param.expose_value:
                yield command_path, param


class _HelpFormatter(click.HelpFormatter):
    """click's, with the options in a narrower column: a variable's name fits unbroken."""

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 24, col_spacing: int = 2
    ) -> None:
        super().write_dl(rows, col_max, col_spacing)


class HelpContext(click.Context):
    """The context of every command: its help lists whole variable names."""

    formatter_class = _HelpFormatter


def name_variables(command: click.Command, path: str, prefix: str) -> None:
    """Give every option of ``command`` its environment variable, shown in its ``--help``.

    An option that names its variable keeps it (the few that several commands share, such
    as ``DENIABLE_SERVER``); every other one reads ``PREFIX_<COMMAND>_<OPTION>`` with
    OPTION its long flag, so ``serve --listen`` of ``deniable-aggregator`` reads
    ``DENIABLE_AGGREGATOR_SERVE_LISTEN``.
    """
    for _, each in commands_of(command, path):
        each.context_class = HelpContext
    for command_path, option in options_of(command, path):
        if not option.envvar:
            option.envvar = f"{prefix}_{command_path}_{option_key(option)}"
        option.show_envvar = True


def retired_variables(
    command: click.Command, path: str, renamed: Mapping[str, Collection[str]]
) -> dict[str, str]:
    """The variables an earlier release read for these options: each with its new name.

    The earlier release read click's automatic ``DENIABLE_<COMMAND>_<PARAMETER>`` (named
    after the parameter, e.g. ``DENIABLE_SERVE_DATABASE`` for ``--db``) and, for the
    options whose flag ``renamed`` lists, the names given there.
    """
    options = list(options_of(command, path))
    current = {str(option.envvar) for _, option in options}
    retired: dict[str, str] = {}
    for command_path, option in options:
        old = [f"DENIABLE_{command_path}_{_upper(str(option.name))}"]
        old += renamed.get(option_key(option), ())
        for name in old:
            if name not in current:
                retired.setdefault(name, str(option.envvar))
    return retired


class LazyGroup(ErrorMappingGroup):
    """A command group whose commands are imported only when they run.

    ``commands`` maps each name to (module, attribute, short help). ``--help`` lists the
    short helps without importing anything, so that a command's imports (numpy, gRPC,
    scipy) are paid only by that command. A test checks that each short help is the first
    line of its command's help.

    A loaded command's options get their environment variables (:func:`name_variables`
    with ``env_prefix``); a variable that an earlier release read for them and that is set
    (while its new name is not) is named in a warning on stderr, or, for a command in
    ``logging_commands``, left in ``ctx.meta[RETIRED_WARNINGS]`` for it to log.
    """

    context_class = HelpContext

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, tuple[str, str, str]],
        env_prefix: str,
        renamed: Mapping[str, Collection[str]] | None = None,
        logging_commands: Collection[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy
        self.env_prefix = env_prefix
        self.renamed = renamed or {}
        self.logging_commands = logging_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, name, _ = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), name)
            if not isinstance(command, click.Command):  # pragma: no cover - a packaging error
                raise TypeError(f"{module}.{name} is not a click command")
            name_variables(command, _upper(cmd_name), self.env_prefix)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command to run; retired variables are named on each run, not once per load."""
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None and command is not None and name in self.lazy:
            self._warn_retired(ctx, name, command)
        return name, command, rest

    def _warn_retired(self, ctx: click.Context, name: str, command: click.Command) -> None:
        warnings = [
            f"{old} is set but ignored: {ctx.command_path} reads {new} instead"
            for old, new in retired_variables(command, _upper(name), self.renamed).items()
            if os.environ.get(old) and not os.environ.get(new)
        ]
        if name in self.logging_commands:
            ctx.meta[RETIRED_WARNINGS] = warnings
            return
        for warning in warnings:
            click.echo(f"Warning: {warning}", err=True)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands as click does, from the short helps (nothing is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, _shorten(self.short_help_of(ctx, name), limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def short_help_of(self, ctx: click.Context, name: str) -> str:
        """A command's short help: from the table, or from the command when it is loaded."""
        if name in self.lazy and name not in self.commands:
            return self.lazy[name][2]
        command = self.get_command(ctx, name)
        return command.get_short_help_str(limit=10_000) if command else ""


def _shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters the way click shortens a command's help."""
    return click.Command("_", help=text).get_short_help_str(limit)
