"""Options shared by the participant's commands: server, JSON output, privacy policy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from client._answer import InvalidAnswerError
from client._policy import DEFAULT_BUDGET, DEFAULT_MAX_EPSILON, ENV_VARS, Policy, resolve_policy

__all__ = [
    "json_option",
    "optional_server_option",
    "policy_from_context",
    "policy_options",
    "server_option",
]

SERVER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})")
Command = TypeVar("Command", bound=Callable[..., Any])


def _check_server(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Accept ``HOST:PORT`` (or ``[IPv6]:PORT``) with a port in 1..65535."""
    if value is None:
        return None
    match = SERVER.fullmatch(value)
    if not match or not 0 < int(match.group(2)) < 65536:
        raise InvalidAnswerError(f"--server {value!r}: expected HOST:PORT, e.g. 127.0.0.1:50051")
    return value


def _server_option(required: bool, text: str) -> Callable[[Command], Command]:
    """``--server HOST:PORT``, also from ``DENIABLE_SERVER``."""
    return click.option(
        "--server",
        envvar="DENIABLE_SERVER",
        show_envvar=True,
        required=required,
        metavar="HOST:PORT",
        callback=_check_server,
        help=text,
    )


server_option = _server_option(True, "Address of the aggregator.")
optional_server_option = _server_option(False, "Show only this aggregator.")


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document on stdout; text to stderr."
)


def policy_options(command: Command) -> Command:
    """``--max-epsilon`` and ``--budget``, also from the environment and the config file."""
    budget = click.option(
        "--budget",
        type=float,
        envvar=ENV_VARS["budget"],
        show_envvar=True,
        metavar="EPSILON",
        help="Total epsilon each aggregator may collect from this device, over all its "
        f"surveys. [default: budget in the config file, else {DEFAULT_BUDGET}]",
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
    return max_epsilon(budget(command))


_SOURCES = {
    ParameterSource.COMMANDLINE: "from the command line",
    ParameterSource.ENVIRONMENT: "from the environment",
}


def policy_from_context(max_epsilon: float | None, budget: float | None) -> Policy:
    """The policy: command line > environment > config file > defaults.

    Raises:
        ConfigError: the config file is malformed (exit code 2).
        InvalidAnswerError: a value is not a finite number > 0 (exit code 2).
    """
    ctx = click.get_current_context()
    given: dict[str, tuple[float | None, str]] = {}
    for name, value in (("max_epsilon", max_epsilon), ("budget", budget)):
        source = ctx.get_parameter_source(name)
        given[name] = (value, _SOURCES.get(source, "default") if source else "default")
    return resolve_policy(given)
