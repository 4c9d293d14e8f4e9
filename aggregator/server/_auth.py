"""Admin bearer-token authentication: a server interceptor and the token file."""

from __future__ import annotations

import hmac
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import grpc

__all__ = [
    "ADMIN_METHODS",
    "AdminToken",
    "AdminTokenInterceptor",
    "check_token",
    "load_or_create_token",
    "read_token_file",
]

ADMIN_METHODS = frozenset(
    {
        "/deniable.v1.Aggregator/CreateSurvey",
        "/deniable.v1.Aggregator/CloseSurvey",
        "/deniable.v1.Aggregator/IssueTokens",
        "/deniable.v1.Aggregator/ExportReports",
    }
)


_TOKEN = re.compile(r"[!-~]{16,512}")  # visible ASCII: valid in an HTTP/2 header value


def check_token(token: str, source: str) -> str:
    """Return the token if it is 16..512 visible ASCII characters, else raise naming ``source``."""
    if not _TOKEN.fullmatch(token):
        raise ValueError(
            f"{source} does not hold a valid admin token "
            "(one line of 16 to 512 visible ASCII characters, no spaces)"
        )
    return token


async def _deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "admin call needs metadata 'authorization: Bearer <token>' with the aggregator's token",
    )


class AdminToken:
    """Whether a call's metadata carries exactly ``authorization: Bearer <token>``.

    A call with several ``authorization`` headers does not, even if one of them is right:
    which one counts would otherwise depend on the order proxies keep. The comparison
    takes the same time whatever the header holds.
    """

    def __init__(self, token: str) -> None:
        check_token(token, "the configured token")
        self._expected = f"Bearer {token}".encode()

    def carried_by(self, metadata: Iterable[tuple[str, Any]] | None) -> bool:
        """True if ``metadata`` holds one ``authorization`` header, the right one."""
        provided = [value for key, value in metadata or () if key == "authorization"]
        token = provided[0] if len(provided) == 1 else b""
        if isinstance(token, str):
            token = token.encode()
        return hmac.compare_digest(token, self._expected)


class AdminTokenInterceptor(grpc.aio.ServerInterceptor):
    """Reject admin RPCs whose ``authorization`` metadata is not ``Bearer <token>``."""

    def __init__(self, token: str | AdminToken) -> None:
        self.token = token if isinstance(token, AdminToken) else AdminToken(token)
        self._denied: grpc.RpcMethodHandler[Any, Any] = grpc.unary_unary_rpc_method_handler(_deny)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Pass everything through except admin calls without exactly the right token.

        A call with several ``authorization`` headers is refused even if one of them is
        right (see :class:`AdminToken`).
        """
        if details.method in ADMIN_METHODS and not self.token.carried_by(
            details.invocation_metadata
        ):
            return self._denied
        return await continuation(details)


def read_token_file(path: Path) -> str:
    """A token file's stripped text; ValueError naming the file if it cannot be read."""
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise ValueError(f"cannot read admin token file {path}: {reason}") from None


def load_or_create_token(
    token_file: Path | None, data_dir: Path, name: str = "admin-token"
) -> tuple[str, Path, bool]:
    """Read the admin token from ``token_file``, or from (or into) ``data_dir/name``.

    A generated token is 32 random bytes, URL-safe, written with mode 0600. Returns the
    token, its path and whether it was created now.
    """
    path = token_file or data_dir / name
    if token_file is not None or path.exists():
        return check_token(read_token_file(path), f"admin token file {path}"), path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token, path, True
