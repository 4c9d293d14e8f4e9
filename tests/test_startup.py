"""Start-up stays light: importing the participant's package or asking for help loads nothing heavy.

Each check runs in a fresh interpreter and lists which heavy modules got imported, so it
measures what was loaded, not how long it took on this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from deniable.shared._cli import LazyGroup

HEAVY = ("numpy", "grpc", "scipy", "google.protobuf")


def loaded_after(code: str) -> list[str]:
    """The heavy modules imported by running ``code`` in a fresh interpreter."""
    probe = (
        "import sys\n"
        f"{code}\n"
        f"print(__import__('json').dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    result: list[str] = json.loads(done.stdout.splitlines()[-1])
    return result


def cli_help(module: str) -> str:
    return (
        "import contextlib\n"
        f"from {module} import cli\n"
        "with contextlib.suppress(SystemExit):\n"
        "    cli(['--help'], prog_name='x')\n"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import deniable.client",
        "import deniable.shared",
        "import deniable.shared.errors",
        cli_help("deniable.client.cli"),
        cli_help("deniable.aggregator.cli"),
    ],
)
def test_nothing_heavy_is_imported(code: str) -> None:
    assert loaded_after(code) == []


def test_a_mechanism_loads_numpy_but_not_grpc_or_scipy() -> None:
    code = "from deniable.client import RandomizedResponse\nRandomizedResponse(0.5).perturb(True)"
    assert loaded_after(code) == ["numpy", "google.protobuf"]


@pytest.mark.parametrize("module", ["deniable.client.cli", "deniable.aggregator.cli"])
def test_the_command_list_says_what_each_command_says_of_itself(module: str) -> None:
    group = __import__(module, fromlist=["cli"]).cli
    assert isinstance(group, LazyGroup)
    context = click.Context(group)
    for name, (_, _, short) in group.lazy.items():
        command = group.get_command(context, name)
        assert command is not None
        assert command.name == name
        assert command.get_short_help_str(limit=10_000) == short
    assert group.get_command(context, "no-such-command") is None
