"""The participant's errors: one line on stderr each, with a documented exit code."""

from __future__ import annotations

import enum
from typing import IO, Any

import click

from deniable.client._remote import RETRYABLE, RemoteError, exit_code_for

__all__ = [
    "AuthError",
    "ExitCode",
    "InvalidAnswerError",
    "NotFoundError",
    "ParticipantError",
    "RefusedError",
    "UnreachableError",
    "from_remote",
]


class ExitCode(enum.IntEnum):
    """Exit codes of the ``deniable`` command (also listed in ``deniable --help``)."""

    OK = 0  # success
    RUNTIME = 1  # unexpected or runtime error
    USAGE = 2  # invalid usage or answer
    UNREACHABLE = 3  # aggregator unreachable (UNAVAILABLE/DEADLINE_EXCEEDED after retries)
    NOT_FOUND = 4  # survey or question not found
    REFUSED = 5  # survey closed or mechanism refused (FAILED_PRECONDITION / policy)
    AUTH = 6  # enrollment token missing or refused (UNAUTHENTICATED / PERMISSION_DENIED)


class ParticipantError(click.ClickException):
    """A failure reported as one line, ``Error: ...`` on stderr; exit code 1 (runtime)."""

    exit_code = ExitCode.RUNTIME

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))  # always one line

    def show(self, file: IO[Any] | None = None) -> None:
        """Print ``Error: <message>`` on one line (stderr unless ``file`` is given)."""
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)


class InvalidAnswerError(ParticipantError):
    """Invalid usage or answer (exit code 2)."""

    exit_code = ExitCode.USAGE


class UnreachableError(ParticipantError):
    """The aggregator could not be reached, even after retries (exit code 3)."""

    exit_code = ExitCode.UNREACHABLE


class NotFoundError(ParticipantError):
    """Unknown survey or question (exit code 4)."""

    exit_code = ExitCode.NOT_FOUND


class RefusedError(ParticipantError):
    """Survey closed or mechanism refused, by the aggregator or by this device (exit code 5)."""

    exit_code = ExitCode.REFUSED


class AuthError(ParticipantError):
    """The aggregator wants credentials this participant lacks: an enrollment token (6)."""

    exit_code = ExitCode.AUTH


def from_remote(error: RemoteError, target: str) -> ParticipantError:
    """Map an aggregator status to a one-line error with the matching exit code."""
    if error.code in RETRYABLE:
        return UnreachableError(
            f"cannot reach the aggregator at {target} after {error.attempts} attempt(s) "
            f"({error.code.name}: {error.details})"
        )
    exit_code = exit_code_for(error.code)
    if exit_code == ExitCode.NOT_FOUND:
        return NotFoundError(error.details)
    if exit_code == ExitCode.REFUSED:
        return RefusedError(f"refused by the aggregator: {error.details}")
    if exit_code == ExitCode.AUTH:
        return AuthError(f"refused by the aggregator: {error.details}")
    message = f"aggregator error {error.code.name}: {error.details}"
    return InvalidAnswerError(message) if exit_code == ExitCode.USAGE else ParticipantError(message)
