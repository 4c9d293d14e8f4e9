"""The daemon's transport security: TLS and mutual-TLS credentials, and the plaintext warning."""

from __future__ import annotations

import ipaddress
import logging
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import grpc

from deniable.shared.transport import TlsError, check_key_pair, read_certificates

__all__ = [
    "ServerTls",
    "TlsError",
    "is_loopback",
    "load_server_tls",
    "plaintext_warning",
    "warn_if_plaintext",
]

_LOCAL_SCHEMES = ("unix:", "unix-abstract:")


@dataclass(frozen=True)
class ServerTls:
    """The daemon's certificate and key, and the CA that signs clients' certificates.

    Attributes:
        cert: the server's PEM certificate chain (leaf first).
        key: its PEM private key.
        client_ca: with it, every client must present a certificate signed by this CA
            (mutual TLS); without it, any client may connect over TLS.
    """

    cert: bytes
    key: bytes
    client_ca: bytes | None = None

    def __post_init__(self) -> None:
        if not self.cert or not self.key:
            raise TlsError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")

    @property
    def mutual(self) -> bool:
        """Whether clients must present a certificate signed by ``client_ca``."""
        return self.client_ca is not None

    def credentials(self) -> grpc.ServerCredentials:
        """The server credentials for :meth:`grpc.Server.add_secure_port`."""
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)],
            root_certificates=self.client_ca,
            require_client_auth=self.mutual,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """The same certificate, key and client CA for the web port (``serve --web``).

        The standard library reads a key only from a file: it is written for the call into
        a folder of mode 0700 (the key file 0600) and removed at once.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        with tempfile.TemporaryDirectory(prefix="deniable-tls-") as folder:
            cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
            cert.write_bytes(self.cert)
            descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(self.key)
            context.load_cert_chain(cert, key)
        if self.client_ca is not None:
            context.load_verify_locations(cadata=self.client_ca.decode("ascii"))
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def load_server_tls(
    cert: Path | None, key: Path | None, client_ca: Path | None = None
) -> ServerTls | None:
    """Read and check ``--tls-cert``, ``--tls-key`` and ``--tls-client-ca``.

    Returns None (plaintext) when none is given.

    Raises:
        TlsError: one of cert and key without the other, --tls-client-ca without them, or
            a file that cannot be read, is not PEM, or a key that does not match the cert.
    """
    if cert is None and key is None:
        if client_ca is not None:
            raise TlsError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
        return None
    if cert is None or key is None:
        given, missing = ("--tls-cert", "--tls-key") if key is None else ("--tls-key", "--tls-cert")
        raise TlsError(f"{given} needs {missing} too (the server's certificate and its key)")
    cert_pem = read_certificates(cert, "--tls-cert")
    key_pem = check_key_pair(cert, key, "--tls-cert", "--tls-key")
    ca_pem = read_certificates(client_ca, "--tls-client-ca") if client_ca is not None else None
    return ServerTls(cert_pem, key_pem, ca_pem)


def is_loopback(listen: str) -> bool:
    """Whether ``listen`` (``HOST:PORT``, ``[IPv6]:PORT``) only accepts this machine's traffic.

    Loopback means 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z), ``localhost`` and Unix
    sockets. Anything else, including ``0.0.0.0``, ``[::]``, an empty host and every other
    host name, may be reachable from the network.
    """
    if listen.startswith(_LOCAL_SCHEMES):
        return True
    host = listen.rsplit(":", 1)[0] if not listen.startswith("[") else listen
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return False
        host = host[1:end]
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: it may resolve to any interface
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def plaintext_warning(
    listen: str, tls: ServerTls | None, carried: str = "reports, survey traffic and the admin token"
) -> str | None:
    """The warning to log when serving without TLS beyond loopback, else None.

    ``carried``: what travels on that port (the web port carries no admin token).
    """
    if tls is not None or is_loopback(listen):
        return None
    return (
        f"serving WITHOUT TLS on {listen}, which is reachable from the network: {carried} "
        "travel unencrypted and can be read or altered. "
        "Enable TLS with --tls-cert FILE --tls-key FILE (and --tls-client-ca FILE for "
        "mutual TLS), or listen on 127.0.0.1 behind a TLS proxy; see docs/security.md"
    )


def warn_if_plaintext(
    listen: str,
    tls: ServerTls | None,
    logger: logging.Logger,
    carried: str = "reports, survey traffic and the admin token",
) -> bool:
    """Log :func:`plaintext_warning` at WARNING when it applies; return whether it did."""
    message = plaintext_warning(listen, tls, carried)
    if message is not None:
        logger.warning(message, extra={"listen": listen, "tls": False})
    return message is not None
