"""Domain errors that carry the gRPC status code they map to, without importing gRPC."""

from __future__ import annotations

__all__ = [
    "AggregatorError",
    "AlreadyExists",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "ResourceExhausted",
    "Unauthenticated",
    "shown",
]

# Status messages travel in a header (gRPC caps metadata at 16 KiB by default): a value a
# client sent is echoed in one at most this long.
SHOWN_CHARACTERS = 40


def shown(value: str) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARACTERS` characters with its length noted."""
    if len(value) <= SHOWN_CHARACTERS:
        return repr(value)
    return f"{value[:SHOWN_CHARACTERS]!r}... ({len(value):,} characters)"


class AggregatorError(Exception):
    """A request the aggregator refuses; ``code`` names a ``grpc.StatusCode`` member."""

    code = "INTERNAL"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(AggregatorError):
    """Malformed input: the message names the field (and the report index)."""

    code = "INVALID_ARGUMENT"


class NotFound(AggregatorError):
    """Unknown survey or question."""

    code = "NOT_FOUND"


class FailedPrecondition(AggregatorError):
    """The request is well-formed but the state forbids it (closed survey, mechanism mismatch)."""

    code = "FAILED_PRECONDITION"


class AlreadyExists(AggregatorError):
    """A report_id already stored with different content."""

    code = "ALREADY_EXISTS"


class ResourceExhausted(AggregatorError):
    """Too much at once (batch larger than the limit)."""

    code = "RESOURCE_EXHAUSTED"


class Unauthenticated(AggregatorError):
    """Missing or unknown credentials (an enrollment token); messages never contain them."""

    code = "UNAUTHENTICATED"
