"""Options shared by the participant's commands: server, TLS, JSON output, privacy policy."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from deniable.client._policy import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_EPSILON,
    ENV_VARS,
    Policy,
    resolve_policy,
)
from deniable.client._token import read_enrollment_token
from deniable.shared.transport.options import check_server, client_tls_options

__all__ = [
    "json_option",
    "optional_server_option",
    "policy_from_context",
    "policy_options",
    "server_option",
    "tls_options",
    "token_options",
]

Command = TypeVar("Command", bound=Callable[..., Any])

tls_options = client_tls_options("DENIABLE")
"""``--tls-ca``, ``--tls-cert``, ``--tls-key``: ``DENIABLE_TLS_CA``, ``_CERT``, ``_KEY``."""


def _server_option(required: bool, text: str) -> Callable[[Command], Command]:
    """``--server HOST:PORT``, also from ``DENIABLE_SERVER``."""
    return click.option(
        "--server",
        envvar="DENIABLE_SERVER",
        show_envvar=True,
        required=required,
        metavar="HOST:PORT",
        callback=check_server,
        help=text,
    )


server_option = _server_option(
    True,
    "Address of the aggregator, HOST:PORT; or several daemons of one aggregator as "
    "dns:///HOST:PORT or ipv4:ADDRESS:PORT,ADDRESS:PORT (a daemon that is down is skipped).",
)
optional_server_option = _server_option(False, "Show only this aggregator.")


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document on stdout; text to stderr."
)


def policy_options(command: Command) -> Command:
    """``--max-epsilon``, ``--budget`` and ``--budget-per-aggregator``, folded into ``policy``.

    Each also comes from the environment and the config file (command line > environment >
    config file > default); the command receives one :class:`Policy` as ``policy``.
    """

    @functools.wraps(command)
    def with_policy(
        *args: Any,
        max_epsilon: float | None,
        budget: float | None,
        budget_per_aggregator: float | None,
        **kw: Any,
    ) -> Any:
        policy = policy_from_context(max_epsilon, budget, budget_per_aggregator)
        return command(*args, policy=policy, **kw)

    budget = click.option(
        "--budget",
        type=float,
        envvar=ENV_VARS["budget"],
        show_envvar=True,
        metavar="EPSILON",
        help="Total epsilon this device may spend, over every aggregator and survey (a "
        "report sent to several aggregators counts once). "
        f"[default: budget in the config file, else {DEFAULT_BUDGET}]",
    )
    budget_per_aggregator = click.option(
        "--budget-per-aggregator",
        type=float,
        envvar=ENV_VARS["budget_per_aggregator"],
        show_envvar=True,
        metavar="EPSILON",
        help="Also cap the epsilon one aggregator (by its name) may collect, below --budget. "
        "[default: budget_per_aggregator in the config file, else no cap]",
    )
    max_epsilon = click.option(
        "--max-epsilon",
        type=float,
        envvar=ENV_VARS["max_epsilon"],
        show_envvar=True,
        metavar="EPSILON",
        help="Refuse any question whose epsilon, computed here, is above this. "
        f"[default: max_epsilon in the config file, else {DEFAULT_MAX_EPSILON}]",
    )
    return cast(Command, max_epsilon(budget(budget_per_aggregator(with_policy))))


_SOURCES = {
    ParameterSource.COMMANDLINE: "from the command line",
    ParameterSource.ENVIRONMENT: "from the environment",
}


def policy_from_context(
    max_epsilon: float | None, budget: float | None, budget_per_aggregator: float | None = None
) -> Policy:
    """The policy: command line > environment > config file > defaults.

    Raises:
        ConfigError: the config file is malformed (exit code 2).
        InvalidAnswerError: a value is not a finite number > 0 (exit code 2).
    """
    ctx = click.get_current_context()
    given: dict[str, tuple[float | None, str]] = {}
    settings = (
        ("max_epsilon", max_epsilon),
        ("budget", budget),
        ("budget_per_aggregator", budget_per_aggregator),
    )
    for name, value in settings:
        source = ctx.get_parameter_source(name)
        given[name] = (value, _SOURCES.get(source, "default") if source else "default")
    return resolve_policy(given)


def token_options(command: Command) -> Command:
    """``--token`` / ``--token-file`` (exclusive), folded into one ``enrollment_token``.

    The command receives the stripped token, or None when neither is given. ``--token``
    also comes from ``DENIABLE_TOKEN``; a file that cannot be read, an empty token or both
    options at once are a one-line error with exit code 2, before anything is sent.
    """

    @functools.wraps(command)
    def with_token(*args: Any, token: str | None, token_file: Path | None, **kw: Any) -> Any:
        source = click.get_current_context().get_parameter_source("token")
        named = "DENIABLE_TOKEN" if source == ParameterSource.ENVIRONMENT else "--token"
        enrollment_token = read_enrollment_token(token, token_file, named)
        return command(*args, enrollment_token=enrollment_token, **kw)

    token_file = click.option(
        "--token-file",
        type=click.Path(path_type=Path),
        envvar="DENIABLE_TOKEN_FILE",
        show_envvar=True,
        metavar="FILE",
        help="Read the enrollment token from FILE instead (exclusive with --token).",
    )
    token = click.option(
        "--token",
        envvar="DENIABLE_TOKEN",
        show_envvar=True,
        metavar="TOKEN",
        help="Your enrollment token, for a survey that requires one: it lets you store one "
        "answer per question. Exit code 6 when it is missing or refused.",
    )
    return cast(Command, token(token_file(with_token)))
