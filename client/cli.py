"""The ``deniable`` command for participants."""

from __future__ import annotations

import enum

import click

import deniable.shared._grpc_env  # noqa: F401  (before grpc is imported: see the module)
from deniable.shared._cli import LazyGroup, run

__all__ = ["COMMANDS", "EXIT_CODES", "ExitCode", "cli", "main"]


class ExitCode(enum.IntEnum):
    """Exit codes of the ``deniable`` command (also listed in ``deniable --help``)."""

    OK = 0  # success
    RUNTIME = 1  # unexpected or runtime error
    USAGE = 2  # invalid usage or answer
    UNREACHABLE = 3  # aggregator unreachable (UNAVAILABLE/DEADLINE_EXCEEDED after retries)
    NOT_FOUND = 4  # survey or question not found
    REFUSED = 5  # survey closed or mechanism refused (FAILED_PRECONDITION / policy)
    AUTH = 6  # enrollment token missing or refused (UNAUTHENTICATED / PERMISSION_DENIED)


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


# Each command's module, object and short help: a command is imported only when it runs,
# so that ``deniable --help`` loads neither numpy nor gRPC.
COMMANDS = {
    "answer": (
        "deniable.client._participant",
        "answer_command",
        "Answer a survey; your answers are randomized on this device first.",
    ),
    "budget": (
        "deniable.client._budget",
        "budget_command",
        "Show the privacy (epsilon) spent and left, on this device and per aggregator.",
    ),
    "explain": (
        "deniable.client._explain",
        "explain_command",
        "Explain in plain words what a yes/no question's privacy setting means for you.",
    ),
    "surveys": (
        "deniable.client._participant",
        "surveys_command",
        "List the open surveys: id, questions, reports so far and title.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    env_prefix="DENIABLE",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="deniable")
def cli() -> None:
    """Answer sensitive questions with plausible deniability.

    \b
    Environment: every option can also be set as DENIABLE_<COMMAND>_<OPTION>,
    for example DENIABLE_EXPLAIN_EPSILON=1; the options several commands share
    have one name: DENIABLE_SERVER, DENIABLE_MAX_EPSILON, DENIABLE_BUDGET,
    DENIABLE_TOKEN, DENIABLE_TOKEN_FILE and DENIABLE_TLS_CA, _CERT, _KEY.
    Each command's --help lists its variables; DENIABLE_AGGREGATOR_* ones
    belong to deniable-aggregator and are ignored here.
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


def main() -> None:
    """Console-script entry point."""
    run(cli)
