"""Aggregator targets: ``HOST:PORT``, gRPC's ``dns:///HOST:PORT`` and address lists."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from deniable.shared.errors import InvalidArgument, shown

__all__ = ["TARGET_FORMS", "Target", "TargetError", "parse_target"]

TARGET_FORMS = (
    "HOST:PORT, [IPv6]:PORT, dns:///HOST:PORT, ipv4:ADDRESS:PORT,ADDRESS:PORT,... "
    "or ipv6:[ADDRESS]:PORT,..."
)
_HOST = re.compile(r"[A-Za-z0-9._-]+")
_SCHEMES = ("dns:", "ipv4:", "ipv6:")


class TargetError(InvalidArgument):
    """A target that is none of the accepted forms; the message names it and the reason."""

    def __init__(self, target: object, reason: str) -> None:
        self.reason = reason
        named = shown(target) if isinstance(target, str) else repr(target)
        super().__init__(f"target {named}: {reason}")


def _port(text: str, target: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise TargetError(target, f"port {text!r} is not 1..65535")
    return int(text)


def _address(text: str, target: str, version: int | None) -> str:
    """One ``HOST:PORT`` (``[IPv6]:PORT``), normalized; ``version`` requires an IP literal."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise TargetError(target, f"{text!r} is not HOST:PORT")
    if host.startswith("[") != host.endswith("]"):
        raise TargetError(target, f"{text!r} is not HOST:PORT (write [IPv6]:PORT)")
    number = _port(port, target)
    bracketed = host.startswith("[")
    bare = host[1:-1] if bracketed else host
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        if version is not None or bracketed or not _HOST.fullmatch(bare):
            kind = f"an IPv{version} address" if version else "a host name or IP address"
            raise TargetError(target, f"{host!r} is not {kind}") from None
        name = bare.lower().rstrip(".")
        if not name:
            raise TargetError(target, f"{host!r} is not a host name") from None
        return f"{name}:{number}"
    if address.version == 6 and not bracketed:
        raise TargetError(target, f"write an IPv6 address as [{bare}]:PORT")
    if version is not None and address.version != version:
        raise TargetError(target, f"{host!r} is not an IPv{version} address")
    return f"[{address.compressed}]:{number}" if address.version == 6 else f"{address}:{number}"


@dataclass(frozen=True)
class Target:
    """Where an aggregator answers: what gRPC dials, and the name of the logical aggregator.

    Attributes:
        grpc: the target handed to gRPC, as given.
        addresses: the normalized ``HOST:PORT`` of each daemon, sorted, without duplicates.
    """

    grpc: str
    addresses: tuple[str, ...]

    @property
    def name(self) -> str:
        """One name for the logical aggregator, however the target spells it.

        ``dns:///Host.:050051`` and ``host:50051`` are one aggregator; an address list is
        named by its sorted addresses joined with commas, whatever the order given.
        """
        return ",".join(self.addresses)

    @property
    def balanced(self) -> bool:
        """Whether gRPC should spread calls over several addresses (and skip dead ones)."""
        return self.grpc.startswith(_SCHEMES)


def parse_target(target: str) -> Target:
    """Parse and check an aggregator target.

    Accepts ``HOST:PORT`` and ``[IPv6]:PORT``, and gRPC's name-resolver forms: ``dns:///``
    (or ``dns:``) followed by ``HOST:PORT`` (every address the name resolves to),
    ``ipv4:`` and ``ipv6:`` followed by a comma-separated list of addresses. Names are not
    resolved.

    Raises:
        TargetError: naming the target and what is wrong with it.

    Example:
        >>> parse_target("dns:///Agg.Example.:0443").name
        'agg.example:443'
        >>> parse_target("ipv4:127.0.0.1:5002,127.0.0.1:5001").name
        '127.0.0.1:5001,127.0.0.1:5002'
    """
    if not isinstance(target, str) or not target:
        raise TargetError(target, "empty" if target == "" else "not a string")
    scheme, version, rest = "", None, target
    for prefix, ip in (("ipv4:", 4), ("ipv6:", 6)):
        if target.startswith(prefix):
            scheme, version, rest = prefix, ip, target[len(prefix) :]
    if target.startswith("dns:"):
        scheme, rest = "dns:", target[len("dns:") :]
        if rest.startswith("//"):
            authority, slash, rest = rest[2:].partition("/")
            if authority or not slash:
                reason = "a DNS server is not supported: write dns:///HOST:PORT"
                raise TargetError(target, reason)
    if not scheme and "," in target:
        raise TargetError(target, "a list of daemons needs ipv4: or ipv6: (or dns:///NAME:PORT)")
    if not scheme and "/" in target:
        raise TargetError(target, f"not one of {TARGET_FORMS}")
    parts = rest.split(",") if version else [rest]
    if not all(parts):
        raise TargetError(target, "an empty address in the list")
    addresses = tuple(sorted({_address(part, target, version) for part in parts}))
    return Target(target, addresses)
