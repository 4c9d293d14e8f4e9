"""The headers of every web-port response: security headers, caching and CORS for listed origins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "ALLOWED_HEADERS",
    "CSP",
    "SECURITY_HEADERS",
    "CorsPolicy",
    "check_origin",
    "with_headers",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's Content-Security-Policy: its own files only, no third party, nothing inline."""
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
"""Sent on every response, whatever its status."""
ALLOWED_HEADERS = "Content-Type, Connect-Protocol-Version, Connect-Timeout-Ms"
"""The request headers a Connect unary call sends, allowed to listed origins."""
PREFLIGHT_MAX_AGE_S = 7200


def check_origin(text: str) -> str:
    """``--web-origin``: an exact origin, ``scheme://host[:port]`` (http or https), as is.

    Raises:
        ValueError: anything else (a path, a wildcard, another scheme), naming it.
    """
    parts = urlsplit(text)
    shape = f"{parts.scheme}://{parts.netloc}"
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "*" in text
        or "@" in parts.netloc
        or shape != text
    ):
        raise ValueError(
            f"--web-origin {text!r}: an origin is scheme://host[:port], e.g. "
            "https://survey.example.org, with no path, no trailing slash and no wildcard"
        )
    return text


@dataclass(frozen=True)
class CorsPolicy:
    """CORS for the RPC routes: none unless origins are listed, then exactly those.

    A request from a listed origin gets ``Access-Control-Allow-Origin`` naming it (never
    ``*``, never credentials); any other origin gets no CORS header, so a browser does not
    let that page read the answer, and a preflight from it is not answered.
    """

    origins: frozenset[str] = frozenset()

    @classmethod
    def of(cls, origins: Iterable[str]) -> CorsPolicy:
        """The policy for ``--web-origin`` values (each checked by :func:`check_origin`)."""
        return cls(frozenset(check_origin(origin) for origin in origins))

    def allows(self, origin: str | None) -> bool:
        """Whether ``origin`` (the request's ``Origin`` header) is listed."""
        return origin is not None and origin in self.origins

    def headers(self, origin: str | None) -> list[tuple[bytes, bytes]]:
        """The CORS headers of an RPC response to a request from ``origin``."""
        if not self.origins:
            return []
        vary = [(b"vary", b"Origin")]
        if not self.allows(origin):
            return vary
        assert origin is not None
        return [(b"access-control-allow-origin", origin.encode()), *vary]

    def preflight(self, origin: str | None) -> list[tuple[bytes, bytes]] | None:
        """The headers of a preflight's answer (besides :meth:`headers`'), or None: refused."""
        if not self.allows(origin):
            return None
        return [
            (b"access-control-allow-methods", b"POST"),
            (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
            (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode()),
        ]


def with_headers(
    headers: Iterable[tuple[bytes, bytes]], extra: Iterable[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """``headers`` with the security headers and ``extra`` (replacing ones of those names).

    A response that sets no ``Cache-Control`` gets ``no-store``: an RPC's answer, the
    health check and errors are never cached.
    """
    added = [*SECURITY_HEADERS, *extra]
    names = {name for name, _ in added} - {b"vary"}  # a second Vary adds to the first
    kept = [(name.lower(), value) for name, value in headers if name.lower() not in names]
    if not any(name == b"cache-control" for name, _ in [*kept, *added]):
        added.append((b"cache-control", b"no-store"))
    return [*kept, *added]
