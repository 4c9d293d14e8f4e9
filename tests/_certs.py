"""Test certificates: two unrelated CAs, a server certificate for 127.0.0.1, client certs."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Pem", "Pki", "make_pki"]

_ONE_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Pem:
    """A certificate and its private key, as PEM bytes and as files."""

    cert: bytes
    key: bytes
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class Pki:
    """Everything the TLS tests need, written under one folder.

    Attributes:
        ca: the CA that signed ``server`` and ``client``.
        other_ca: an unrelated CA that signed ``other_client``.
        server: a server certificate for IP 127.0.0.1 and DNS localhost, signed by ``ca``.
        client: a client certificate signed by ``ca``.
        other_client: a client certificate signed by ``other_ca``.
    """

    ca: Pem
    other_ca: Pem
    server: Pem
    client: Pem
    other_client: Pem


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = _key_pem(key)
    cert_file, key_file = folder / f"{name}.crt", folder / f"{name}.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    key_file.chmod(0o600)
    return Pem(cert_pem, key_pem, cert_file, key_file)


def _builder(
    subject: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _ONE_DAY)
        .not_valid_after(now + 30 * _ONE_DAY)
    )


def _ca(folder: Path, name: str) -> tuple[Pem, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = f"deniable test {name}"
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    cert = (
        _builder(subject, issuer, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _write(folder, name, cert, key), cert, key


def _leaf(
    folder: Path,
    name: str,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    *,
    server: bool,
) -> Pem:
    ca_cert, ca_key = issuer
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(f"deniable test {name}", ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if server:
        names: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
            x509.DNSName("localhost"),
        ]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return _write(folder, name, builder.sign(ca_key, hashes.SHA256()), key)


def make_pki(folder: Path) -> Pki:
    """Generate the CAs and certificates (ECDSA P-256, valid from yesterday for 30 days)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_cert, ca_key = _ca(folder, "ca")
    other_ca, other_cert, other_key = _ca(folder, "other-ca")
    return Pki(
        ca=ca,
        other_ca=other_ca,
        server=_leaf(folder, "server", (ca_cert, ca_key), server=True),
        client=_leaf(folder, "client", (ca_cert, ca_key), server=False),
        other_client=_leaf(folder, "other-client", (other_cert, other_key), server=False),
    )
