"""Commands load only what they use: no module imports scipy or numba until it is needed."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from deniable import aggregator
from deniable.aggregator import cli as cli_package

HEAVY = ("scipy", "numba")
MODULES = [
    "aggregator",
    "deniable.aggregator.cli",
    *sorted(module for module, _, _ in cli_package.COMMANDS.values()),
]


@pytest.mark.parametrize("module", MODULES)
def test_importing_loads_neither_scipy_nor_numba(module: str) -> None:
    """Each would add 0.3 s (scipy) or 0.4 s (numba) to every command that imports it."""
    code = f"import sys, {module}; print([m for m in {HEAVY!r} if m in sys.modules])"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_every_public_name_is_the_one_of_its_module() -> None:
    assert sorted(aggregator.__all__) == sorted(aggregator._EXPORTS)
    for name in aggregator.__all__:
        module = importlib.import_module(aggregator._EXPORTS[name])
        assert getattr(aggregator, name) is getattr(module, name)
    assert set(aggregator.__all__) <= set(dir(aggregator))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'estimate'"):
        aggregator.estimate  # noqa: B018 - the access is the test


def test_every_command_is_listed_and_found() -> None:
    group = cli_package.cli
    context = click.Context(group)
    assert group.list_commands(context) == sorted(cli_package.COMMANDS)
    for name in cli_package.COMMANDS:
        command = group.get_command(context, name)
        assert command is not None
        assert command.name == name
    assert group.get_command(context, "estimates") is None
