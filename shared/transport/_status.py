"""gRPC statuses on the calling side: which are retried, and the error each becomes."""

from __future__ import annotations

import grpc

from deniable.shared.errors import RETRYABLE_CODES, RemoteError

__all__ = ["RETRYABLE", "RemoteError"]

RETRYABLE = frozenset(grpc.StatusCode[name] for name in RETRYABLE_CODES)
"""Statuses worth retrying with the same request: the call may not have been handled."""
