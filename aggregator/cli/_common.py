"""Helpers shared by the analyst CLI's commands: errors, JSON output, mechanism options."""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import click
from click.core import ParameterSource

import deniable.shared._grpc_env  # noqa: F401  (before grpc is imported: see the module)
from deniable.shared._cli import fail as _fail
from deniable.shared.transport.options import check_server, client_tls_options

__all__ = [
    "ADMIN_TOKEN_FILE_VARIABLE",
    "ADMIN_TOKEN_VARIABLE",
    "DATABASE_VARIABLE",
    "PREFIX",
    "admin_token_file_option",
    "emit_json",
    "fail",
    "jsonable",
    "mechanism_options",
    "optional_token",
    "overflow_is_invalid_input",
    "read_token",
    "remote_errors",
    "server_option",
    "tls_options",
    "token_option",
    "user_errors",
]

F = TypeVar("F", bound=Callable[..., Any])

PREFIX = "DENIABLE_AGGREGATOR"
"""Every variable ``deniable-aggregator`` reads starts so (the participant's never do)."""
ADMIN_TOKEN_VARIABLE = f"{PREFIX}_ADMIN_TOKEN"
ADMIN_TOKEN_FILE_VARIABLE = f"{PREFIX}_ADMIN_TOKEN_FILE"
"""``--admin-token-file`` of ``serve`` and of the admin commands: the same token."""
DATABASE_VARIABLE = f"{PREFIX}_DB"
"""``--db`` of ``serve`` and ``check``: the same database."""
RETIRED_ADMIN_TOKEN_VARIABLE = "DENIABLE_ADMIN_TOKEN"  # read before 0.2

tls_options = client_tls_options(PREFIX)
"""``--tls-ca``, ``--tls-cert``, ``--tls-key``, shared by the commands that call a daemon."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn validation errors from the library into a one-line usage error (exit code 2)."""
    try:
        yield
    except (ValueError, TypeError) as error:
        raise click.UsageError(str(error)) from None


def overflow_is_invalid_input(command: F) -> F:
    """Turn an arithmetic overflow from extreme inputs into one line naming them (exit 2).

    A margin of 1e-300 or a range of 1e308 gives figures a float cannot hold; the line
    names every option given, as the one to change is among them.
    """

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ArithmeticError as error:
            reason = error.args[-1] if error.args else type(error).__name__
            fail(f"cannot compute with {_given_numbers()}: {reason}; use less extreme values", 2)

    return cast(F, checked)


def _given_numbers() -> str:
    """The numeric options given on the command line or in the environment, as typed."""
    ctx = click.get_current_context()
    given = []
    for param in ctx.command.params:
        value = ctx.params.get(str(param.name))
        source = ctx.get_parameter_source(str(param.name))
        if (
            isinstance(param, click.Option)
            and source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            given.append(f"{max(param.opts, key=len)} {value:g}")
    return " ".join(given) or "these values"


def jsonable(value: Any) -> Any:
    """Replace non-finite floats by None (JSON has no inf/NaN): ε = inf means no privacy."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def emit_json(data: dict[str, Any]) -> None:
    """Write exactly one JSON document to stdout."""
    click.echo(json.dumps(jsonable(data), indent=2, allow_nan=False))


def mechanism_options(function: F) -> F:
    """Add the mutually exclusive ``--alpha`` / ``--epsilon`` options."""
    function = click.option(
        "--epsilon",
        type=float,
        help="Privacy loss ε per answer (yes/no: α = tanh(ε/2)). Exclusive with --alpha.",
    )(function)
    return click.option(
        "--alpha",
        type=float,
        help="Keep-probability α of randomized response (yes/no, or --mechanism grr), 0 < α <= 1.",
    )(function)


# --- talking to a daemon ---------------------------------------------------------------


def fail(message: str, exit_code: int) -> NoReturn:
    """Print ``Error: message`` on stderr and exit with ``exit_code``."""
    raise _fail(message, exit_code)


@contextmanager
def remote_errors(server: str) -> Iterator[None]:
    """Turn an aggregator's status into one line on stderr and its exit code.

    Unreachable (UNAVAILABLE, DEADLINE_EXCEEDED, a failed TLS handshake) keeps gRPC's
    reason, which tells a refused connection from a certificate that did not verify.
    """
    from deniable.shared.transport import RemoteError

    try:
        yield
    except RemoteError as error:
        if error.retryable:
            reason = " ".join(error.details.split())
            message = f"cannot reach the aggregator at {server} ({error.code.lower()}: {reason})"
        else:
            message = f"{error.code.lower().replace('_', ' ')}: {error.details}"
        fail(message, error.exit_code)


def server_option(function: F) -> F:
    """``--server HOST:PORT`` (also ``DENIABLE_AGGREGATOR_SERVER``), checked."""
    return click.option(
        "--server",
        envvar=f"{PREFIX}_SERVER",
        default="127.0.0.1:50051",
        show_default=True,
        metavar="HOST:PORT",
        callback=check_server,
        help="Aggregator address HOST:PORT ([IPv6]:PORT), port 1..65535; or several "
        "daemons of one aggregator as dns:///HOST:PORT or ipv4:ADDRESS:PORT,ADDRESS:PORT "
        "(calls go round-robin and skip a daemon that is down).",
    )(function)


def admin_token_file_option(envvar: str | None) -> Callable[[F], F]:
    """``--admin-token-file F``, read from ``envvar`` (None: the command's own variable)."""
    return click.option(
        "--admin-token-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar=envvar,
        help=f"File with the admin token; or set {ADMIN_TOKEN_VARIABLE} to the token.",
    )


token_option = admin_token_file_option(ADMIN_TOKEN_FILE_VARIABLE)
"""``--admin-token-file F`` of the commands that call a daemon (one variable for all)."""


def read_token(token_file: Path | None) -> str:
    """The admin token from the file, else ``DENIABLE_AGGREGATOR_ADMIN_TOKEN``; else exit 2."""
    from deniable.aggregator.server import check_token, read_token_file

    if token_file is not None:
        with user_errors():
            token, source = read_token_file(token_file), f"admin token file {token_file}"
    else:
        token, source = os.environ.get(ADMIN_TOKEN_VARIABLE, "").strip(), ADMIN_TOKEN_VARIABLE
        if not token:
            retired = (
                f" ({RETIRED_ADMIN_TOKEN_VARIABLE} is set but no longer read: rename it)"
                if os.environ.get(RETIRED_ADMIN_TOKEN_VARIABLE)
                else ""
            )
            raise click.UsageError(
                f"admin commands need --admin-token-file or {ADMIN_TOKEN_VARIABLE}{retired}"
            )
    with user_errors():
        return check_token(token, source)


def optional_token(token_file: Path | None) -> str | None:
    """The admin token as :func:`read_token` finds it, or None when none is given."""
    if token_file is None and not os.environ.get(ADMIN_TOKEN_VARIABLE, "").strip():
        return None
    return read_token(token_file)
