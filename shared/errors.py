"""One hierarchy of errors, each carrying the gRPC status it maps to; no transport, no CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grpc

__all__ = [
    "EXIT_CODES",
    "AggregatorError",
    "AlreadyExists",
    "DeniableError",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "RemoteError",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    "exit_code_for",
    "shown",
]

# Status messages travel in a header (gRPC caps metadata at 16 KiB by default): a value a
# client sent is echoed in one at most this long.
SHOWN_CHARACTERS = 40

EXIT_CODES: dict[str, int] = {
    "INVALID_ARGUMENT": 2,
    "RESOURCE_EXHAUSTED": 2,
    "UNAVAILABLE": 3,
    "DEADLINE_EXCEEDED": 3,
    "NOT_FOUND": 4,
    "FAILED_PRECONDITION": 5,
    "ALREADY_EXISTS": 5,
    "UNAUTHENTICATED": 6,
    "PERMISSION_DENIED": 6,
}
"""The exit code both command-line tools use for an error of each status (1 otherwise).

0 success, 1 unexpected runtime error, 2 invalid usage, input or answer (a missing admin
token too), 3 aggregator unreachable, 4 survey or question not found, 5 refused (closed
survey, an estimate below ``min_reports``, a survey already answered, a mechanism or
answer the participant's policy or budget does not allow, a local file that cannot be
trusted), 6 credentials refused, or an enrollment token missing. README.md's table lists
the same, and a test compares the two.
"""


def exit_code_for(code: str) -> int:
    """The documented exit code for a status name (``grpc.StatusCode`` member name)."""
    return EXIT_CODES.get(code, 1)


def shown(value: str) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARACTERS` characters with its length noted.

    Example:
        >>> shown("x" * 50)
        "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (50 characters)"
    """
    if len(value) <= SHOWN_CHARACTERS:
        return repr(value)
    return f"{value[:SHOWN_CHARACTERS]!r}... ({len(value):,} characters)"


class DeniableError(Exception):
    """Base of every error deniable raises on purpose; ``code`` names its gRPC status.

    Messages are one line that names what is wrong. The aggregator's servicer answers a
    request with the error's status and message; the command-line tools print
    ``Error: message`` and exit with :func:`exit_code_for` of the code.
    """

    code: str = "UNKNOWN"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def exit_code(self) -> int:
        """The command-line tools' exit code for this error."""
        return exit_code_for(self.code)


AggregatorError = DeniableError
"""The aggregator's refusals are deniable errors (the name its modules use)."""


class InvalidArgument(DeniableError, ValueError):
    """Malformed input: the message names the field (and the report index) or the value."""

    code = "INVALID_ARGUMENT"


class NotFound(DeniableError, LookupError):
    """Unknown survey or question."""

    code = "NOT_FOUND"


class FailedPrecondition(DeniableError):
    """Well-formed, but the state forbids it (closed survey, mechanism mismatch, a refusal)."""

    code = "FAILED_PRECONDITION"


class AlreadyExists(DeniableError):
    """A report id already stored with different content, or an answered token question."""

    code = "ALREADY_EXISTS"


class ResourceExhausted(DeniableError):
    """Too much at once (a batch over the limit)."""

    code = "RESOURCE_EXHAUSTED"


class Unauthenticated(DeniableError):
    """Missing or unknown credentials; messages never contain them."""

    code = "UNAUTHENTICATED"


class PermissionDenied(DeniableError):
    """Credentials that do not allow the call."""

    code = "PERMISSION_DENIED"


class Unavailable(DeniableError):
    """The aggregator could not be reached (after retries)."""

    code = "UNAVAILABLE"


class Internal(DeniableError):
    """Something that should not happen, such as storage that cannot be used."""

    code = "INTERNAL"


RETRYABLE_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
"""Statuses worth retrying with the same request: the call may not have been handled."""


class RemoteError(DeniableError):
    """The aggregator answered with a non-OK status, or could not be reached.

    Attributes:
        status: the ``grpc.StatusCode``.
        code: its name, as every :class:`DeniableError` has.
        details: the aggregator's message (or the status name when it sent none).
        attempts: how many calls were made (retries included).
    """

    def __init__(self, status: grpc.StatusCode, details: str, attempts: int = 1) -> None:
        super().__init__(f"{status.name}: {details}")
        self.status = status
        self.code = str(status.name)
        self.details = details
        self.attempts = attempts

    @property
    def retryable(self) -> bool:
        """Whether the call may not have been handled (UNAVAILABLE, DEADLINE_EXCEEDED)."""
        return self.code in RETRYABLE_CODES
