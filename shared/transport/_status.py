"""gRPC statuses on the calling side: which are retried, and the error each becomes."""

from __future__ import annotations

import grpc

from deniable.shared.errors import RETRYABLE_CODES, RemoteError

__all__ = ["RETRYABLE", "RemoteError", "worth_retrying"]

RETRYABLE = frozenset(grpc.StatusCode[name] for name in RETRYABLE_CODES)
"""Statuses worth retrying with the same request: the call may not have been handled."""

_PERMANENT = ("handshake failed",)
"""Details of UNAVAILABLE that no retry mends: a TLS handshake that failed (a certificate
that does not verify, a protocol mismatch) fails the same way a second later."""


def worth_retrying(code: grpc.StatusCode, details: str) -> bool:
    """Whether a failed call may succeed if sent again unchanged.

    Example:
        >>> worth_retrying(grpc.StatusCode.UNAVAILABLE, "failed to connect: Socket closed")
        True
        >>> worth_retrying(grpc.StatusCode.UNAVAILABLE, "Tls handshake failed: CERT...")
        False
    """
    lowered = details.lower()
    return code in RETRYABLE and not any(marker in lowered for marker in _PERMANENT)
