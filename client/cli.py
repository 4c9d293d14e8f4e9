"""The ``deniable`` command for participants."""

from __future__ import annotations

import json

import click

import deniable.client._grpc_env  # noqa: F401  (before grpc is imported: see the module)
from deniable.client._answer import ExitCode
from deniable.client._budget import budget_command
from deniable.client._participant import answer_command, surveys_command
from deniable.shared import RandomizedResponseSpec

__all__ = ["EXIT_CODES", "cli", "main"]

EXIT_CODES: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.RUNTIME: "unexpected or runtime error",
    ExitCode.USAGE: "invalid usage or answer",
    ExitCode.UNREACHABLE: "aggregator unreachable (after retries)",
    ExitCode.NOT_FOUND: "survey or question not found",
    ExitCode.REFUSED: "refused: survey closed, mechanism or answer refused by your privacy "
    "policy or budget, or ledger unreadable",
    ExitCode.AUTH: "enrollment token missing or refused",
}
"""Every exit code of ``deniable``, as listed in its help text."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deniable")
def cli() -> None:
    """Answer sensitive questions with plausible deniability.

    \b
    Environment: every option can also be set as DENIABLE_<COMMAND>_<OPTION>,
    for example DENIABLE_EXPLAIN_EPSILON=1; --server also as DENIABLE_SERVER,
    --max-epsilon as DENIABLE_MAX_EPSILON, --budget as DENIABLE_BUDGET,
    --tls-ca, --tls-cert, --tls-key as DENIABLE_TLS_CA, _CERT, _KEY.
    TLS: --tls-ca CA.pem verifies the aggregator; add --tls-cert and --tls-key
    for mutual TLS. A failed TLS handshake exits 3 (see docs/security.md).
    Config file: $XDG_CONFIG_HOME/deniable/config.toml, a [participant] table
    with max_epsilon and budget (command line > environment > file > defaults).
    Files: ledger, memo and lock in $XDG_DATA_HOME/deniable.
    Exit codes: 0 success, 1 unexpected or runtime error,
    2 invalid usage or answer, 3 aggregator unreachable (after retries),
    4 survey or question not found, 5 refused: survey closed, mechanism or
    answer refused by your privacy policy or budget, or ledger unreadable,
    6 enrollment token missing or refused.
    """


@cli.command("explain")
@click.option("--alpha", type=float, help="Keep-probability α of randomized response.")
@click.option("--epsilon", type=float, help="Privacy loss ε; α = tanh(ε/2).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def explain(alpha: float | None, epsilon: float | None, as_json: bool) -> None:
    """Explain in plain words what a yes/no question's privacy setting means for you."""
    if (alpha is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --alpha or --epsilon")
    try:
        spec = (
            RandomizedResponseSpec(alpha)
            if alpha is not None
            else RandomizedResponseSpec.from_epsilon(epsilon)  # type: ignore[arg-type]
        )
    except (ValueError, TypeError) as error:
        raise click.UsageError(str(error)) from None
    if as_json:
        data = spec.describe() | {"explanation": spec.explain()}
        if not spec.is_private:
            data["epsilon"] = None
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(spec.explain())


cli.add_command(surveys_command)
cli.add_command(answer_command)
cli.add_command(budget_command)


def main() -> None:
    """Console-script entry point."""
    cli(auto_envvar_prefix="DENIABLE")
