"""Transport both sides share: TLS credentials from PEM files, keepalive, the gRPC channel."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from deniable.shared.errors import InvalidArgument

__all__ = [
    "CHANNEL_KEEPALIVE",
    "LARGEST_MESSAGE_BYTES",
    "MAX_MESSAGE_BYTES",
    "TlsConfig",
    "TlsError",
    "check_key_pair",
    "load_client_tls",
    "open_channel",
    "read_certificates",
]

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# gRPC's own cap on a message (its sizes are C ints), and so on every daemon's
# --max-message-bytes: a channel that accepts this receives any batch a daemon stored.
LARGEST_MESSAGE_BYTES = 2**31 - 1
# Keepalive of every channel to an aggregator (docs/security.md, "Keepalive"). A ping every
# 30 s, also between calls, finds a dead connection (a NAT or load balancer that dropped it)
# before the next call waits on it; 10 s without the ack closes the connection, and the
# next call reconnects. The aggregator accepts pings 15 s apart even with no call in flight
# (the daemon's ServerLimits), so it never answers these with GOAWAY too_many_pings.
CHANNEL_KEEPALIVE: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),  # keep pinging through a long quiet call
)
_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----[A-Za-z0-9+/=\s]+-----END \1-----")
_KEY_LABELS = frozenset({b"PRIVATE KEY", b"RSA PRIVATE KEY", b"EC PRIVATE KEY"})


class TlsError(InvalidArgument):
    """A TLS file that cannot be read or used; the message names the option and the file."""


def _labels(data: bytes) -> list[bytes]:
    return [match.group(1) for match in _BLOCK.finditer(data)]


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise TlsError(f"{option} {path}: cannot read ({error.strerror})") from None


def read_certificates(path: Path, option: str) -> bytes:
    """The PEM certificates in ``path`` (a CA bundle, or a certificate chain).

    Raises:
        TlsError: the file cannot be read or holds no valid PEM certificate.
    """
    data = _read(path, option)
    if b"CERTIFICATE" not in _labels(data):
        raise TlsError(f"{option} {path}: no PEM certificate (-----BEGIN CERTIFICATE-----)")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=str(path))
    except ssl.SSLError as error:
        raise TlsError(f"{option} {path}: invalid PEM certificate ({error.reason})") from None
    return data


def check_key_pair(cert: Path, key: Path, cert_option: str, key_option: str) -> bytes:
    """Check that ``key`` is an unencrypted PEM private key matching ``cert``; return it.

    Raises:
        TlsError: naming the key file (or both files when they do not match).
    """
    data = _read(key, key_option)
    labels = _labels(data)
    if b"ENCRYPTED PRIVATE KEY" in labels or b"Proc-Type: 4,ENCRYPTED" in data:
        raise TlsError(
            f"{key_option} {key}: encrypted private keys are not supported; "
            f"decrypt it with: openssl pkey -in {key} -out plain.key"
        )
    if not _KEY_LABELS.intersection(labels):
        raise TlsError(f"{key_option} {key}: no PEM private key (-----BEGIN PRIVATE KEY-----)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(cert), str(key), password=b"")
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise TlsError(
                f"{key_option} {key}: the private key does not match the certificate "
                f"{cert_option} {cert}"
            ) from None
        raise TlsError(f"{key_option} {key}: invalid PEM private key ({error.reason})") from None
    return data


@dataclass(frozen=True)
class TlsConfig:
    """How a client connects over TLS: PEM bytes, checked when loaded from files.

    Attributes:
        ca: the CA certificates that sign the aggregator's certificate (None: the
            system's trust store).
        cert: this client's certificate chain, for mutual TLS (with ``key``).
        key: this client's private key, for mutual TLS (with ``cert``).
    """

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise TlsError("a client certificate needs its key: give both --tls-cert and --tls-key")
        for field, value in (("ca", self.ca), ("cert", self.cert)):
            if value is not None and b"CERTIFICATE" not in _labels(value):
                raise TlsError(f"tls.{field}: no PEM certificate")
        if self.key is not None and not _KEY_LABELS.intersection(_labels(self.key)):
            raise TlsError("tls.key: no unencrypted PEM private key")

    @property
    def mutual(self) -> bool:
        """Whether the client presents a certificate (mutual TLS)."""
        return self.cert is not None

    def credentials(self) -> grpc.ChannelCredentials:
        """The channel credentials gRPC uses for the handshake."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )


def load_client_tls(ca: Path | None, cert: Path | None, key: Path | None) -> TlsConfig | None:
    """Read and check ``--tls-ca``, ``--tls-cert`` and ``--tls-key``; None when none is given.

    ``--tls-ca`` alone: TLS that authenticates the aggregator. With ``--tls-cert`` and
    ``--tls-key``: mutual TLS (the CA defaults to the system's trust store).

    Raises:
        TlsError: only one of cert and key, or a file that cannot be read or used.
    """
    if ca is None and cert is None and key is None:
        return None
    if (cert is None) != (key is None):
        given, missing = ("--tls-cert", "--tls-key") if key is None else ("--tls-key", "--tls-cert")
        raise TlsError(f"{given} needs {missing} too (a client certificate and its key)")
    ca_pem = read_certificates(ca, "--tls-ca") if ca is not None else None
    cert_pem = key_pem = None
    if cert is not None and key is not None:
        cert_pem = read_certificates(cert, "--tls-cert")
        key_pem = check_key_pair(cert, key, "--tls-cert", "--tls-key")
    return TlsConfig(ca_pem, cert_pem, key_pem)


def open_channel(
    target: str,
    tls: TlsConfig | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    *,
    balanced: bool = False,
    max_receive_bytes: int | None = None,
) -> grpc.Channel:
    """A channel to ``target``: TLS when ``tls`` is given, else plaintext.

    ``balanced`` (a target naming several daemons) spreads calls round-robin over every
    address that accepts connections: a daemon that is down is skipped, and a call that
    failed on it is retried by the caller on another. Messages are at most
    ``max_message_bytes`` each way, or ``max_receive_bytes`` received when given.
    """
    options: list[tuple[str, int | str]] = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_receive_bytes or max_message_bytes),
        *CHANNEL_KEEPALIVE,
    ]
    if balanced:
        options.append(("grpc.lb_policy_name", "round_robin"))
    if tls is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, tls.credentials(), options=options)
