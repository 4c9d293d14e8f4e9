"""The ``deniable`` command for participants."""

from __future__ import annotations

import json

import click

from shared import RandomizedResponseSpec

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deniable")
def cli() -> None:
    """Answer sensitive questions with plausible deniability.

    \b
    Environment: every option can also be set as DENIABLE_<COMMAND>_<OPTION>,
    for example DENIABLE_EXPLAIN_EPSILON=1.
    Exit codes: 0 success, 1 runtime error, 2 invalid usage or input.
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


def main() -> None:
    """Console-script entry point."""
    cli(auto_envvar_prefix="DENIABLE")
