"""``deniable explain``: what a yes/no question's privacy setting means, in plain words."""

from __future__ import annotations

import json

import click

from deniable.shared.mechanisms import RandomizedResponse

__all__ = ["explain_command"]


@click.command("explain")
@click.option("--alpha", type=float, help="Keep-probability α of randomized response.")
@click.option("--epsilon", type=float, help="Privacy loss ε; α = tanh(ε/2).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def explain_command(alpha: float | None, epsilon: float | None, as_json: bool) -> None:
    """Explain in plain words what a yes/no question's privacy setting means for you."""
    if (alpha is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --alpha or --epsilon")
    try:
        spec = (
            RandomizedResponse(alpha)
            if alpha is not None
            else RandomizedResponse.from_epsilon(epsilon)  # type: ignore[arg-type]
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
