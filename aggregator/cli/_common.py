"""Helpers shared by the analyst CLI's commands: errors, JSON output, mechanism options."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

import deniable.shared._grpc_env  # noqa: F401  (before grpc is imported: see the module)
from deniable.shared._cli import fail as _fail
from deniable.shared.mechanisms import RandomizedResponse
from deniable.shared.transport.options import tls_options

__all__ = [
    "emit_json",
    "fail",
    "jsonable",
    "mechanism_options",
    "privacy_line",
    "read_token",
    "remote_errors",
    "server_option",
    "spec_from_options",
    "tls_options",
    "token_option",
    "transport_line",
    "user_errors",
]

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn validation errors from the library into a one-line usage error (exit code 2)."""
    try:
        yield
    except (ValueError, TypeError) as error:
        raise click.UsageError(str(error)) from None


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


def spec_from_options(alpha: float | None, epsilon: float | None) -> RandomizedResponse:
    """Build the mechanism from exactly one of ``--alpha`` and ``--epsilon``."""
    if (alpha is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --alpha or --epsilon")
    with user_errors():
        if alpha is not None:
            return RandomizedResponse(alpha)
        assert epsilon is not None
        return RandomizedResponse.from_epsilon(epsilon)


def privacy_line(spec: RandomizedResponse) -> str:
    """Exact ε, with 2α shown only as the labelled approximation."""
    if not spec.is_private:
        return "Privacy: none (alpha = 1, epsilon = infinity)"
    return (
        f"Privacy: epsilon = {spec.epsilon:.4f} (exact, ln((1+a)/(1-a))); "
        f"approximation 2*alpha = {spec.epsilon_approx:.4f} understates it"
    )


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
    """``--server HOST:PORT`` (also ``DENIABLE_SERVER``)."""
    return click.option(
        "--server",
        envvar="DENIABLE_SERVER",
        default="127.0.0.1:50051",
        show_default=True,
        help="Aggregator address HOST:PORT (env DENIABLE_SERVER).",
    )(function)


def token_option(function: F) -> F:
    """``--admin-token-file F`` (the token itself may come from ``DENIABLE_ADMIN_TOKEN``)."""
    return click.option(
        "--admin-token-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="File with the admin token; or set DENIABLE_ADMIN_TOKEN.",
    )(function)


def read_token(token_file: Path | None) -> str:
    """The admin token from the file, else ``DENIABLE_ADMIN_TOKEN``; a usage error if none."""
    from deniable.aggregator.server._auth import check_token, read_token_file

    if token_file is not None:
        with user_errors():
            token, source = read_token_file(token_file), f"admin token file {token_file}"
    else:
        token, source = os.environ.get("DENIABLE_ADMIN_TOKEN", "").strip(), "DENIABLE_ADMIN_TOKEN"
        if not token:
            raise click.UsageError("admin commands need --admin-token-file or DENIABLE_ADMIN_TOKEN")
    with user_errors():
        return check_token(token, source)


def transport_line(info: dict[str, Any], read_back: str = "the estimate above was") -> str:
    """Where ``simulate`` sent the reports over gRPC, and how fast (``grpc`` of --json)."""
    where = "embedded daemon" if info["embedded"] else "daemon"
    return (
        f"Transport: gRPC to the {where} at {info['address']}, "
        f"{info['reports_sent']:,} reports in batches of {info['batch_size']:,}: "
        f"{info['reports_per_second']:,.0f} reports/s through SubmitReports; "
        f"{read_back} read back with GetEstimate"
    )
