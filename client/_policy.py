"""The participant's privacy policy: maximum ε per answer, device-wide budget, aggregator cap."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deniable.client._answer import check_mechanism
from deniable.client._errors import InvalidAnswerError, RefusedError
from deniable.client._files import config_dir
from deniable.shared._validate import as_real
from deniable.shared.mechanisms import Mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_EPSILON",
    "ENV_VARS",
    "ConfigError",
    "Policy",
    "config_path",
    "load_config",
    "resolve_policy",
    "round_down",
    "round_up",
]

DEFAULT_MAX_EPSILON = 2.0
"""Largest ε one answer may cost: a yes/no guess right at most 88% of the time (docs/privacy.md)."""
DEFAULT_BUDGET = 10.0
"""Total ε this device may spend, over every aggregator and survey (docs/privacy.md)."""
CONFIG_NAME = "config.toml"
ENV_VARS = {
    "max_epsilon": "DENIABLE_MAX_EPSILON",
    "budget": "DENIABLE_BUDGET",
    "budget_per_aggregator": "DENIABLE_BUDGET_PER_AGGREGATOR",
}
"""The environment variable of each policy setting (also DENIABLE_<COMMAND>_<OPTION>)."""
_OPTIONS = {
    "max_epsilon": "--max-epsilon",
    "budget": "--budget",
    "budget_per_aggregator": "--budget-per-aggregator",
}


class ConfigError(InvalidAnswerError):
    """The configuration file is malformed or holds an invalid value (exit code 2)."""


def round_up(epsilon: float) -> str:
    """ε for display with 4 decimals, rounded up (a cost is never understated)."""
    return f"{math.ceil(epsilon * 10_000) / 10_000:.4f}"


def round_down(epsilon: float) -> str:
    """ε for display with 4 decimals, rounded down (what is left is never overstated)."""
    return f"{max(math.floor(epsilon * 10_000) / 10_000, 0.0):.4f}"


def config_path() -> Path:
    """``$XDG_CONFIG_HOME/deniable/config.toml`` (``~/.config/deniable/config.toml``)."""
    return config_dir() / CONFIG_NAME


def _positive(name: str, value: object) -> float:
    """A finite ε > 0, or a ValueError/TypeError naming the setting and the value."""
    number = as_real(name, value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {number!r}")
    return number


@dataclass(frozen=True)
class Policy:
    """What this device agrees to: ``max_epsilon`` per answer, ``budget`` over everything.

    ``budget`` is device-wide: the ε of every draw sent to any aggregator, each draw once.
    ``budget_per_aggregator`` (None: none) caps what one aggregator (by name) may collect; it
    may sit below ``budget``, never lift it.

    ``sources`` says where each value came from (command line, environment, config file,
    default), for messages; it does not take part in comparisons.

    Example:
        >>> Policy().max_epsilon, Policy().budget
        (2.0, 10.0)
        >>> Policy(budget=0)
        Traceback (most recent call last):
        ...
        ValueError: budget must be a finite number > 0, got 0.0
    """

    max_epsilon: float = DEFAULT_MAX_EPSILON
    budget: float = DEFAULT_BUDGET
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    budget_per_aggregator: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_epsilon", _positive("max_epsilon", self.max_epsilon))
        object.__setattr__(self, "budget", _positive("budget", self.budget))
        if self.budget_per_aggregator is not None:
            cap = _positive("budget_per_aggregator", self.budget_per_aggregator)
            object.__setattr__(self, "budget_per_aggregator", cap)
        object.__setattr__(self, "sources", dict(self.sources))

    def source(self, name: str) -> str:
        """Where the setting ``name`` came from ("default" unless told otherwise)."""
        return self.sources.get(name, "default")

    def how_to_change(self, name: str) -> str:
        """The three ways to change a setting, for refusal messages."""
        return f"{_OPTIONS[name]}, {ENV_VARS[name]} or {name} in {config_path()}"

    def check(self, question: pb.Question) -> Mechanism:
        """The question's mechanism if this policy accepts it, with ε computed here.

        The mechanism must be known, valid and private (:func:`check_mechanism`) and its
        ε, computed on this device from its parameters, at most ``max_epsilon``.

        Raises:
            RefusedError: the mechanism is refused; the message says why and what to do.
        """
        spec = check_mechanism(question)
        if spec.epsilon > self.max_epsilon:
            raise RefusedError(
                f"question {question.id!r}: epsilon {round_up(spec.epsilon)} (computed on this "
                f"device from {spec.name}) is above your limit of {self.max_epsilon!r} per answer "
                f"({self.source('max_epsilon')}); refusing to answer, nothing was sent. To accept "
                f"this privacy loss, raise the limit with {self.how_to_change('max_epsilon')}"
            )
        return spec


def load_config(path: Path) -> dict[str, float]:
    """The policy settings in a TOML config file (empty when the file does not exist).

    The file holds a ``[participant]`` table with ``max_epsilon``, ``budget`` and/or
    ``budget_per_aggregator``.

    Raises:
        ConfigError: unreadable, not TOML, unknown keys, or invalid values; the message
            names the file, the key and the bad value.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"config file {path}: cannot be read ({error}); fix or remove it"
        ) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            f"config file {path}: not valid TOML ({error}); fix or remove it"
        ) from None
    unknown = sorted(set(document) - {"participant"})
    if unknown:
        hint = " (put them under [participant])" if set(unknown) & set(ENV_VARS) else ""
        raise ConfigError(
            f"config file {path}: unknown keys {unknown}{hint}; expected a [participant] table"
        )
    table: Any = document.get("participant", {})
    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: participant must be a table, got {table!r}")
    unknown = sorted(set(table) - set(ENV_VARS))
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown keys {unknown} in [participant]; "
            f"expected {sorted(ENV_VARS)}"
        )
    settings = {}
    for name, value in table.items():
        try:
            settings[name] = _positive(name, value)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"config file {path}: [participant] {error}") from None
    return settings


def resolve_policy(
    given: Mapping[str, tuple[float | None, str]], path: Path | None = None
) -> Policy:
    """The policy, by precedence: ``given`` (command line or environment) > config file > default.

    ``given`` maps a setting to its value (None when not given) and where it came from.

    Raises:
        ConfigError: the config file is malformed.
        InvalidAnswerError: a given value is not a finite number > 0.
    """
    path = path or config_path()
    from_file = load_config(path)
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name in ENV_VARS:
        value, source = given.get(name, (None, ""))
        if value is not None:
            values[name], sources[name] = value, source
        elif name in from_file:
            values[name], sources[name] = from_file[name], f"from {path}"
    try:
        return Policy(**values, sources=sources)
    except (TypeError, ValueError) as error:
        name = str(error).split(" ", 1)[0]
        raise InvalidAnswerError(f"{_OPTIONS.get(name, name)}: {error}") from None
