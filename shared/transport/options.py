"""Command-line options both tools share: the aggregator's address and TLS files."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from deniable.shared.errors import InvalidArgument
from deniable.shared.transport import TargetError, load_client_tls, parse_target

__all__ = ["check_server", "client_tls_options"]

Command = TypeVar("Command", bound=Callable[..., Any])


def check_server(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Accept an aggregator target, ``HOST:PORT`` or several daemons (a click callback).

    ``[IPv6]:PORT`` too, and ``dns:///HOST:PORT`` or ``ipv4:A:PORT,B:PORT`` for the
    daemons of one aggregator (see :func:`parse_target`).
    """
    if value is None:
        return None
    try:
        parse_target(value)
    except TargetError as error:
        raise InvalidArgument(
            f"--server {value!r}: {error.reason}; expected HOST:PORT (e.g. 127.0.0.1:50051), "
            "or several daemons as dns:///HOST:PORT or ipv4:ADDRESS:PORT,ADDRESS:PORT"
        ) from None
    return value


_TLS_OPTIONS = (
    ("--tls-ca", "TLS_CA", "CA certificate(s) (PEM) that sign the aggregator's "
     "certificate: connect over TLS and verify the aggregator."),
    ("--tls-cert", "TLS_CERT", "This client's certificate (PEM), for mutual TLS; "
     "needs --tls-key. Without --tls-ca the system's CAs verify the aggregator."),
    ("--tls-key", "TLS_KEY", "The private key (PEM, unencrypted) of --tls-cert."),
)  # fmt: skip


def client_tls_options(prefix: str | None) -> Callable[[Command], Command]:
    """The TLS options of a program's commands, reading ``PREFIX_TLS_CA`` (and so on).

    ``prefix`` is the program's, so that each program reads only its own variables; with
    None the command line tool names them after the command (as its other options).
    """
    return functools.partial(_tls_options, prefix=prefix)


def _tls_options(command: Command, prefix: str | None) -> Command:
    """``--tls-ca``, ``--tls-cert`` and ``--tls-key``, folded into one ``tls`` parameter.

    The command receives ``tls``: the checked :class:`TlsConfig`, or None (plaintext) when
    none of the three is given. Files are read before the command runs; one that cannot be
    used raises :class:`TlsError` (invalid input, exit code 2) naming it.
    """

    @functools.wraps(command)
    def with_tls(
        *args: Any, tls_ca: Path | None, tls_cert: Path | None, tls_key: Path | None, **kw: Any
    ) -> Any:
        return command(*args, tls=load_client_tls(tls_ca, tls_cert, tls_key), **kw)

    decorated: Callable[..., Any] = with_tls
    for name, variable, text in reversed(_TLS_OPTIONS):
        decorated = click.option(
            name,
            type=click.Path(path_type=Path),
            envvar=f"{prefix}_{variable}" if prefix else None,
            show_envvar=True,
            metavar="FILE",
            help=text,
        )(decorated)
    return cast(Command, decorated)
