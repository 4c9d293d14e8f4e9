"""What both command-line tools share: one-line errors, with the documented exit codes."""

from __future__ import annotations

import importlib
from typing import Any

import click

from deniable.shared.errors import DeniableError
from deniable.shared.text import visible

__all__ = ["ErrorMappingGroup", "LazyGroup", "fail"]


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


class LazyGroup(ErrorMappingGroup):
    """A command group whose commands are imported only when they run.

    ``commands`` maps each name to (module, attribute, short help). ``--help`` lists the
    short helps without importing anything, so that a command's imports (numpy, gRPC,
    scipy) are paid only by that command. A test checks that each short help is the first
    line of its command's help.
    """

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, name, _ = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), name)
            if not isinstance(command, click.Command):  # pragma: no cover - a packaging error
                raise TypeError(f"{module}.{name} is not a click command")
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

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
