"""The web port's ASGI application: routes, limits, headers and one access-log line per request."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from deniable.aggregator.server.web._connect import SERVICE_PATH
from deniable.aggregator.server.web._headers import CorsPolicy, with_headers
from deniable.aggregator.server.web._options import PARTICIPANT_RPCS
from deniable.aggregator.server.web._page import Page, StaticFile
from deniable.shared.errors import shown
from deniable.shared.questions import SURVEY_ID

__all__ = ["ASGIApp", "Health", "WebApp"]

log = logging.getLogger("deniable.aggregator")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Health = Callable[[], tuple[bool, bool]]
"""Whether the daemon is serving (the gRPC health service's answer), and taking reports."""
CODECS = ("application/json", "application/proto")
READ_ONLY = ("GET", "HEAD")
TOO_MANY_CALLS = "Concurrent RPC limit exceeded!"  # grpcio's words on the gRPC port
BODY_S = 30.0  # a call's body must all have arrived this long after its headers
MAX_LOGGED_PATH = 200


@dataclass
class _Exchange:
    """What the access log says of one request, filled in as the response goes out."""

    status: int = 0
    sent: int = 0
    code: str | None = None
    error_body: bytearray = field(default_factory=bytearray)


class WebApp:
    """Routes a request to the Connect RPCs, the health check or the page; adds headers.

    Args:
        connect: the participant's RPCs (:func:`~._connect.connect_app`).
        page: the bundle's files.
        cors: which other origins may call the RPCs.
        health: the daemon's health (:data:`Health`).
        max_message_bytes: the largest request body (``--max-message-bytes``); a larger
            ``Content-Length`` is refused before the body is read.
        max_concurrent_rpcs: RPCs handled at once on this port (``--max-concurrent-rpcs``).
    """

    def __init__(
        self,
        connect: ASGIApp,
        page: Page,
        cors: CorsPolicy,
        health: Health,
        *,
        max_message_bytes: int,
        max_concurrent_rpcs: int,
    ) -> None:
        self.connect = connect
        self.page = page
        self.cors = cors
        self.health = health
        self.max_message_bytes = max_message_bytes
        self.max_concurrent_rpcs = max_concurrent_rpcs
        self.calls = 0  # RPCs being handled (on this port's event loop only)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (uvicorn runs no lifespan and no websockets here)."""
        if scope["type"] != "http":
            return
        began = time.monotonic()
        exchange = _Exchange()
        headers = {name.decode("latin-1"): value for name, value in scope["headers"]}
        origin = _text(headers.get("origin"))
        rpc = scope["path"].startswith(f"{SERVICE_PATH}/")
        cors = self.cors.headers(origin) if rpc else []

        async def respond(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                message["headers"] = with_headers(message.get("headers", ()), cors)
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                exchange.sent += len(body)
                if rpc and exchange.status >= 400 and len(exchange.error_body) < 8192:
                    exchange.error_body += body
            await send(message)

        try:
            await self._route(scope, receive, respond, headers, origin)
        except Exception:  # a bug: answered here, so that it too carries the headers
            log.error("internal error", exc_info=True, extra={"path": scope["path"][:200]})
            if exchange.status:
                raise  # the answer had begun: uvicorn closes the connection
            await _plain(respond, 500, "internal error; see the aggregator's log")
        finally:
            _access_log(scope, headers, exchange, began)

    async def _route(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, bytes],
        origin: str | None,
    ) -> None:
        path, method = scope["path"], scope["method"]
        if path.startswith(f"{SERVICE_PATH}/"):
            await self._rpc(scope, receive, send, headers, origin)
        elif path == "/healthz":
            await self._health(method, send)
        elif path == "/" or (path.startswith("/s/") and SURVEY_ID.fullmatch(path[3:])):
            await _file(self.page.index, method, headers, send)
        elif path in self.page.static:
            await _file(self.page.static[path], method, headers, send)
        else:
            await _plain(send, 404, "not found")

    async def _rpc(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, bytes],
        origin: str | None,
    ) -> None:
        """A Connect unary call to one of :data:`PARTICIPANT_RPCS`, or its refusal."""
        name = scope["path"][len(SERVICE_PATH) + 1 :]
        method = scope["method"]
        if name not in PARTICIPANT_RPCS:
            await _connect_error(
                send, 404, "unimplemented",
                f"{SERVICE_PATH[1:]}/{shown(name)[1:-1]} is not served on the web port, which "
                f"serves a participant's calls only: {', '.join(PARTICIPANT_RPCS)}",
            )  # fmt: skip
            return
        if method == "OPTIONS":
            preflight = self.cors.preflight(origin)
            if preflight is None:  # no CORS unless the origin is listed
                await _plain(send, 405, "method not allowed", [(b"allow", b"POST")])
            else:
                await _reply(send, 204, b"", preflight)
            return
        if method != "POST":
            await _plain(send, 405, "method not allowed", [(b"allow", b"POST")])
            return
        content_type = _text(headers.get("content-type")) or ""
        if content_type.partition(";")[0].strip().lower() not in CODECS:
            accept = [(b"accept-post", ", ".join(CODECS).encode())]
            await _plain(send, 415, "a Connect unary call: application/json or proto", accept)
            return
        length = _text(headers.get("content-length"))
        if length is None or not length.isdigit():
            await _plain(send, 411, "a call needs a Content-Length")
            return
        if int(length) > self.max_message_bytes:  # as gRPC words it; the body is not read
            message = f"Received message larger than max ({length} vs. {self.max_message_bytes})"
            await _connect_error(send, 429, "resource_exhausted", message, close=True)
            return
        if self.calls >= self.max_concurrent_rpcs:
            await _connect_error(send, 429, "resource_exhausted", TOO_MANY_CALLS)
            return
        self.calls += 1
        try:
            await self.connect(scope, _body_within(receive, BODY_S), send)
        finally:
            self.calls -= 1

    async def _health(self, method: str, send: Send) -> None:
        """``/healthz``: SERVING (200) or NOT_SERVING (503), as the gRPC health service says."""
        if method not in READ_ONLY:
            await _plain(send, 405, "method not allowed", [(b"allow", b"GET, HEAD")])
            return
        serving, accepting = self.health()
        status = "SERVING" if serving else "NOT_SERVING"
        reports = "accepted" if accepting else "refused: below the free-space watermark"
        body = json.dumps({"status": status, "reports": reports}).encode()
        content = [(b"content-type", b"application/json")]
        content.append((b"content-length", str(len(body)).encode()))
        await _reply(send, 200 if serving else 503, b"" if method == "HEAD" else body, content)


async def _file(file: StaticFile, method: str, headers: dict[str, bytes], send: Send) -> None:
    """A file of the page: 304 when the client holds this version, no body for HEAD."""
    if method not in READ_ONLY:
        await _plain(send, 405, "method not allowed", [(b"allow", b"GET, HEAD")])
        return
    tags = [(b"etag", file.etag.encode()), (b"cache-control", b"no-cache")]
    if file.matches(_text(headers.get("if-none-match")) or ""):
        await _reply(send, 304, b"", tags)
        return
    content = [(b"content-type", file.content_type.encode()), *tags]
    length = [(b"content-length", str(len(file.body)).encode())]
    await _reply(send, 200, b"" if method == "HEAD" else file.body, [*content, *length])


async def _connect_error(
    send: Send, status: int, code: str, message: str, *, close: bool = False
) -> None:
    """A Connect unary error: the HTTP status and ``{"code", "message"}`` as JSON."""
    body = json.dumps({"code": code, "message": message}).encode()
    extra = [(b"connection", b"close")] if close else []
    await _reply(send, status, body, [(b"content-type", b"application/json"), *extra])


async def _plain(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    content = [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])]
    await _reply(send, status, f"{text}\n".encode(), content)


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Send a whole response; its Content-Length unless given (HEAD) or bodiless (204, 304)."""
    if status not in (204, 304) and not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _body_within(receive: Receive, seconds: float) -> Receive:
    """``receive``, refusing a body that has not all arrived ``seconds`` after the call began.

    A caller that trickles its body would otherwise hold one of the port's calls for as
    long as it likes; this one is answered DEADLINE_EXCEEDED, nothing done.
    """
    deadline = asyncio.get_running_loop().time() + seconds
    done = False

    async def timed() -> Message:
        nonlocal done
        if done:  # the body is in: waiting for a disconnect has no deadline
            return await receive()
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise ConnectError(
                Code.DEADLINE_EXCEEDED,
                f"the request's body did not all arrive within {seconds:g} s; nothing done",
            ) from None
        done = message["type"] != "http.request" or not message.get("more_body", False)
        return message

    return timed


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


def _access_log(scope: Scope, headers: dict[str, bytes], exchange: _Exchange, began: float) -> None:
    """One line per request: never its body (reports, tokens), its query or its headers."""
    if exchange.error_body:
        try:
            exchange.code = str(json.loads(bytes(exchange.error_body))["code"])
        except (ValueError, KeyError, TypeError):
            exchange.code = None
    client = scope.get("client")
    path: str = scope["path"]
    length = _text(headers.get("content-length")) or ""
    log.info(
        "web request",
        extra={
            "method": scope["method"],
            "path": path if len(path) <= MAX_LOGGED_PATH else f"{path[:MAX_LOGGED_PATH]}...",
            "status": exchange.status,
            "code": exchange.code,
            "peer": client[0] if client else None,
            "bytes_in": int(length) if length.isdigit() else None,
            "bytes_out": exchange.sent,
            "ms": round((time.monotonic() - began) * 1000, 1),
        },
    )
