"""The daemon's listen address: ``HOST:PORT``, ``[IPv6]:PORT`` or a Unix socket, checked."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from deniable.shared.errors import InvalidArgument

__all__ = ["ListenAddress"]

_UNIX_SCHEMES = ("unix:", "unix-abstract:")
_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9.])?")
_OUT_OF_RANGE = "port {} is out of range 1..65535 (0: any free port)"
_EXAMPLE = "expected HOST:PORT with a port 1..65535 (0: any free port), e.g. 127.0.0.1:50051"


@dataclass(frozen=True)
class ListenAddress:
    """Where the daemon listens: a host (IPv6 in brackets) and a port, or a Unix socket.

    ``port`` 0 asks the OS for any free port; ``port`` None means ``host`` is a Unix socket
    target (``unix:PATH`` or ``unix-abstract:NAME``).

    Example:
        >>> str(ListenAddress.parse("[::1]:0").with_port(50051))
        '[::1]:50051'
    """

    host: str
    port: int | None

    def __post_init__(self) -> None:
        if self.port is None:
            if not self.host.startswith(_UNIX_SCHEMES) or self.host.endswith(":"):
                raise InvalidArgument(f"listen address {self.host!r}: {_EXAMPLE}")
            return
        shown = f"{self.host}:{self.port}"
        if not 0 <= self.port <= 65535:
            raise InvalidArgument(f"listen address {shown!r}: {_OUT_OF_RANGE.format(self.port)}")
        if self.host.startswith("["):
            try:
                ipaddress.IPv6Address(self.host[1:-1] if self.host.endswith("]") else "")
            except ValueError:
                raise InvalidArgument(
                    f"listen address {shown!r}: {self.host} is not an IPv6 address in brackets"
                ) from None
        elif ":" in self.host:
            raise InvalidArgument(
                f"listen address {shown!r}: an IPv6 address goes in brackets, "
                f"e.g. [{self.host}]:{self.port}"
            )
        elif not _HOST_NAME.fullmatch(self.host):
            raise InvalidArgument(f"listen address {shown!r}: no valid host; {_EXAMPLE}")

    @classmethod
    def parse(cls, text: str) -> ListenAddress:
        """``HOST:PORT``, ``[IPv6]:PORT``, ``unix:PATH`` or ``unix-abstract:NAME``.

        Raises:
            InvalidArgument: the text names no host, no port, a port outside 0..65535 or
                an IPv6 address without brackets; the message quotes the text.
        """
        if text.startswith(_UNIX_SCHEMES):
            return cls(text, None)
        host, colon, port = text.rpartition(":")
        if not colon or not host:
            problem = "no port" if not colon else "no host"
            raise InvalidArgument(f"listen address {text!r}: {problem}; {_EXAMPLE}")
        if host.count(":") and not host.startswith("["):
            raise InvalidArgument(
                f"listen address {text!r}: an IPv6 address goes in brackets, e.g. [::1]:50051"
            )
        if not port.isascii() or not port.isdigit():
            raise InvalidArgument(f"listen address {text!r}: port {port!r} is not a number")
        if len(port) > 5:
            raise InvalidArgument(f"listen address {text!r}: {_OUT_OF_RANGE.format(port)}")
        return cls(host, int(port))

    def with_port(self, port: int) -> ListenAddress:
        """The same host with the port actually bound (a Unix socket stays as it is)."""
        return self if self.port is None else ListenAddress(self.host, port)

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"
