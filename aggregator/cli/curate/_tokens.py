"""``curate tokens issue|revoke|list``: the custodian's analysts, against the daemon."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from deniable.aggregator.cli._common import PREFIX, emit_json, fail, remote_errors, tls_options
from deniable.aggregator.cli.curate._session import balance_from_wire
from deniable.shared.transport import TlsConfig
from deniable.shared.transport.options import check_server
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["tokens_group"]

F = TypeVar("F", bound=Callable[..., Any])
ADMIN_VARIABLE = f"{PREFIX}_CURATE_ADMIN_TOKEN"


def _admin_options(function: F) -> F:
    function = tls_options(function)
    function = click.option(
        "--admin-token-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar=f"{PREFIX}_CURATE_ADMIN_TOKEN_FILE",
        show_envvar=True,
        help=f"The custodian's admin token (`curate serve` prints where); or {ADMIN_VARIABLE}.",
    )(function)
    function = click.option(
        "--server",
        default="127.0.0.1:50061",
        show_default=True,
        envvar=f"{PREFIX}_CURATE_SERVER",
        show_envvar=True,
        metavar="HOST:PORT",
        callback=check_server,
        help="The curator daemon.",
    )(function)
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(
        function
    )


def _client(server: str, admin_token_file: Path | None, tls: TlsConfig | None) -> Any:
    from deniable.aggregator.server.curator import CuratorClient

    if admin_token_file is not None:
        token = admin_token_file.read_text().strip()
    else:
        token = os.environ.get(ADMIN_VARIABLE, "").strip()
    if not token:
        raise click.UsageError(f"give --admin-token-file or set {ADMIN_VARIABLE}")
    return CuratorClient(server, token, tls=tls)


def _balance(balance: pb.Balance) -> dict[str, Any]:
    return balance_from_wire(balance).to_dict()


@click.group("tokens")
def tokens_group() -> None:
    """Issue, revoke and list analysts' tokens on a curator daemon (custodian's admin token).

    Each token names one analyst and carries its own budget (ε, δ) within the data set's
    total. Every analyst is also bounded by what is left of the data set's total, so
    analysts who pool their answers together learn at most the data set's ε.
    """


@tokens_group.command("issue")
@_admin_options
@click.option("--analyst", required=True, help="The analyst's name ([A-Za-z0-9_.@-], ≤ 64).")
@click.option("--budget", type=float, required=True, help="The analyst's total ε.")
@click.option("--delta", type=float, default=0.0, show_default=True, help="The analyst's δ.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the token to this new file (mode 0600) instead of stdout; never overwrites.",
)
def issue_command(
    server: str,
    admin_token_file: Path | None,
    tls: TlsConfig | None,
    as_json: bool,
    analyst: str,
    budget: float,
    delta: float,
    output: Path | None,
) -> None:
    """Issue an analyst's token with its budget; the token is shown once."""
    if not 0 < budget < math.inf:  # also refuses NaN
        fail(f"--budget must be a finite number > 0, got {budget!r}", 2)
    if not 0 <= delta < 1:
        fail(f"--delta must be in [0, 1), got {delta!r}", 2)
    if output is not None and (output.exists() or not output.parent.is_dir()):
        fail(f"--output: {output} exists or its folder does not (a token file is never "
             "overwritten)", 2)  # fmt: skip
    with remote_errors(server), _client(server, admin_token_file, tls) as client:
        response = client.issue_token(analyst, budget, delta)
    if output is not None:
        try:
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as error:
            fail(f"--output: cannot create {output} ({error.strerror}); the token was issued, "
                 f"revoke it with `curate tokens revoke --analyst {analyst}`", 2)  # fmt: skip
        with os.fdopen(fd, "w") as handle:
            handle.write(response.token + "\n")
    document = {"analyst": analyst, "balance": _balance(response.balance)}
    if output is None:
        document["token"] = response.token
    else:
        document["token_file"] = str(output)
    if as_json:
        emit_json(document)
        return
    if output is None:
        click.echo(response.token)
    click.echo(
        f"issued a token for {analyst!r}: budget ε = {budget:g}, δ = {delta:g}"
        + (f", written to {output}" if output else " (shown once, above)"),
        err=True,
    )


@tokens_group.command("revoke")
@_admin_options
@click.option("--analyst", required=True, help="The analyst whose token stops working.")
def revoke_command(
    server: str, admin_token_file: Path | None, tls: TlsConfig | None, as_json: bool, analyst: str
) -> None:
    """Revoke an analyst's token; what they spent stays counted against the data set."""
    with remote_errors(server), _client(server, admin_token_file, tls) as client:
        response = client.revoke_token(analyst)
    if as_json:
        emit_json({"analyst": analyst, "revoked": True, "balance": _balance(response.balance)})
    else:
        click.echo(f"revoked the token of {analyst!r} (spent ε = {response.balance.epsilon_spent})")


@tokens_group.command("list")
@_admin_options
def list_command(
    server: str, admin_token_file: Path | None, tls: TlsConfig | None, as_json: bool
) -> None:
    """Every analyst's budget and spending, and the data set's totals."""
    with remote_errors(server), _client(server, admin_token_file, tls) as client:
        response = client.analysts()
    document = {
        "dataset": response.dataset,
        "epsilon_budget": response.dataset_epsilon_budget,
        "delta_budget": response.dataset_delta_budget,
        "analysts": [_balance(item) for item in response.analysts],
        "revoked": list(response.revoked),
    }
    if as_json:
        emit_json(document)
        return
    click.echo(
        f"Data set {response.dataset!r}: ε budget {response.dataset_epsilon_budget}, "
        f"δ budget {response.dataset_delta_budget}"
    )
    for item in response.analysts:
        state = " (revoked)" if item.analyst in response.revoked else ""
        click.echo(
            f"  {item.analyst}{state}: spent ε {item.epsilon_spent} of {item.epsilon_budget}, "
            f"δ {item.delta_spent} of {item.delta_budget}"
        )
