"""The participant's errors: one line each, in the library's one hierarchy (no CLI here)."""

from __future__ import annotations

from deniable.shared.errors import (
    DeniableError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    RemoteError,
    Unauthenticated,
    Unavailable,
)

__all__ = [
    "AuthError",
    "InvalidAnswerError",
    "NotFoundError",
    "ParticipantError",
    "RefusedError",
    "UnreachableError",
    "from_remote",
]


class ParticipantError(DeniableError):
    """A failure on the participant's side, as one line (a runtime error unless refined)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))  # always one line


class InvalidAnswerError(ParticipantError, InvalidArgument):
    """Invalid usage or answer."""


class UnreachableError(ParticipantError, Unavailable):
    """The aggregator could not be reached, even after retries."""


class NotFoundError(ParticipantError, NotFound):
    """Unknown survey or question."""


class RefusedError(ParticipantError, FailedPrecondition):
    """Survey closed or mechanism refused, by the aggregator or by this device."""


class AuthError(ParticipantError, Unauthenticated):
    """The aggregator wants credentials this participant lacks: an enrollment token."""


def from_remote(error: RemoteError, target: str) -> ParticipantError:
    """Map an aggregator status to a one-line error of the matching kind."""
    if error.retryable:
        return UnreachableError(
            f"cannot reach the aggregator at {target} after {error.attempts} attempt(s) "
            f"({error.code}: {error.details})"
        )
    if error.code == "NOT_FOUND":
        return NotFoundError(error.details)
    if error.code in ("FAILED_PRECONDITION", "ALREADY_EXISTS"):
        return RefusedError(f"refused by the aggregator: {error.details}")
    if error.code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return AuthError(f"refused by the aggregator: {error.details}")
    message = f"aggregator error {error.code}: {error.details}"
    if error.code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"):
        return InvalidAnswerError(message)
    return ParticipantError(message)
