"""Helpers shared by the analyst CLI's commands: errors, JSON output, mechanism options."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from shared import RandomizedResponseSpec

__all__ = [
    "emit_json",
    "jsonable",
    "mechanism_options",
    "privacy_line",
    "spec_from_options",
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
        help="Privacy loss ε per answer; α = tanh(ε/2). Exclusive with --alpha.",
    )(function)
    return click.option(
        "--alpha",
        type=float,
        help="Keep-probability α of randomized response, 0 < α <= 1.",
    )(function)


def spec_from_options(alpha: float | None, epsilon: float | None) -> RandomizedResponseSpec:
    """Build the mechanism from exactly one of ``--alpha`` and ``--epsilon``."""
    if (alpha is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --alpha or --epsilon")
    with user_errors():
        if alpha is not None:
            return RandomizedResponseSpec(alpha)
        assert epsilon is not None
        return RandomizedResponseSpec.from_epsilon(epsilon)


def privacy_line(spec: RandomizedResponseSpec) -> str:
    """Exact ε, with 2α shown only as the labelled approximation."""
    if not spec.is_private:
        return "Privacy: none (alpha = 1, epsilon = infinity)"
    return (
        f"Privacy: epsilon = {spec.epsilon:.4f} (exact, ln((1+a)/(1-a))); "
        f"approximation 2*alpha = {spec.epsilon_approx:.4f} understates it"
    )
