"""What both sides need of gRPC: channels and TLS, and statuses (click options: ``.options``)."""

from __future__ import annotations

from deniable.shared.transport._status import RETRYABLE, RemoteError, worth_retrying
from deniable.shared.transport._target import TARGET_FORMS, Target, TargetError, parse_target
from deniable.shared.transport._tls import (
    CHANNEL_KEEPALIVE,
    LARGEST_MESSAGE_BYTES,
    MAX_MESSAGE_BYTES,
    TlsConfig,
    TlsError,
    check_key_pair,
    load_client_tls,
    open_channel,
    read_certificates,
)

__all__ = [
    "CHANNEL_KEEPALIVE",
    "LARGEST_MESSAGE_BYTES",
    "MAX_MESSAGE_BYTES",
    "RETRYABLE",
    "TARGET_FORMS",
    "RemoteError",
    "Target",
    "TargetError",
    "TlsConfig",
    "TlsError",
    "check_key_pair",
    "load_client_tls",
    "open_channel",
    "parse_target",
    "read_certificates",
    "worth_retrying",
]
