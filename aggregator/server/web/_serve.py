"""The web port's HTTP server: uvicorn on an event loop in a thread of its own, in the daemon."""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import ssl
import threading
from concurrent.futures import Executor

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server._admission import Admission
from deniable.aggregator.server._limits import ServerLimits
from deniable.aggregator.server._report_gate import ReportGate
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.server._tls import ServerTls
from deniable.aggregator.server.web._app import Health, WebApp
from deniable.aggregator.server.web._connect import ParticipantRpcs, connect_app
from deniable.aggregator.server.web._headers import CorsPolicy
from deniable.aggregator.server.web._options import WebListenError, WebOptions
from deniable.aggregator.server.web._page import Page

__all__ = ["WebServer", "start_web"]

STARTUP_S = 30.0  # only so that a server that never starts fails instead of hanging
IDLE_S = 5  # a connection idle between two requests for this long is closed (uvicorn's)
HEADERS_S = 10.0  # a request's headers must have arrived this long after the connection opened


def _protocol(max_connections: int) -> type[H11Protocol]:
    """The HTTP/1.1 protocol of uvicorn, with the gRPC port's connection limits and deadlines.

    A connection beyond ``max_connections`` is closed as soon as it is accepted (as
    ``grpc.max_allowed_incoming_connections`` does), and one whose next request has not
    begun (its headers all arrived) within :data:`HEADERS_S` of its opening or of the last
    answer is closed: a caller that trickles its headers holds a connection that long at
    most (uvicorn itself times out only a connection idle between two requests).
    """

    class Bounded(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()
                return
            self._expect_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._expect_request()

        def _expect_request(self) -> None:
            self.loop.call_later(HEADERS_S, self._overdue, self.cycle)

        def _overdue(self, cycle: object) -> None:
            if self.cycle is cycle and not self.transport.is_closing():
                self.transport.close()  # no new request began: the same cycle as then

    return Bounded


def _bind(address: ListenAddress) -> socket.socket:
    """A listening socket on ``address``: its errors are raised here, in the caller's thread."""
    host = address.host[1:-1] if address.host.startswith("[") else address.host
    port = address.port or 0
    try:
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)[0][0]
        dual = family == socket.AF_INET6 and host in ("::", "") and socket.has_dualstack_ipv6()
        return socket.create_server((host, port), family=family, dualstack_ipv6=dual)
    except OSError as error:
        raise WebListenError(f"cannot serve the web port on {address}: {error}") from None


class _Server(uvicorn.Server):
    """uvicorn's server that tells when it listens, and never installs signal handlers."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening on ``sockets``, then say so."""
        await super().startup(sockets)
        self.ready.set()


class WebServer:
    """The web port: its socket, its uvicorn server and the thread whose loop runs it."""

    def __init__(self, app: WebApp, sock: socket.socket, limits: ServerLimits) -> None:
        self.app = app
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.config = uvicorn.Config(
            app, http=_protocol(limits.max_connections), ws="none", lifespan="off",
            log_config=None, access_log=False, server_header=False, proxy_headers=False,
            timeout_keep_alive=IDLE_S,
        )  # fmt: skip
        self.server = _Server(self.config)
        self.thread = threading.Thread(target=self._run, name="web-loop", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))

    def start(self, tls: ssl.SSLContext | None) -> None:
        """Start serving; WebListenError if the server does not come up."""
        self.config.load()
        self.config.ssl = tls
        self.thread.start()
        while not self.server.ready.wait(0.05):
            if not self.thread.is_alive():
                raise WebListenError(f"the web port on port {self.port} did not start")

    def begin_stop(self, grace: float) -> None:
        """Stop accepting connections; requests under way may finish within ``grace`` s."""
        self.config.timeout_graceful_shutdown = math.ceil(grace)
        self.server.should_exit = True  # the server's loop looks every 0.1 s

    def stop(self, grace: float) -> None:
        """Stop (see :meth:`begin_stop`) and wait until every request has ended."""
        self.begin_stop(grace)
        self.thread.join()
        self.loop.close()


def _route_uvicorn_logs() -> None:
    """Uvicorn's own warnings and errors as the daemon's JSON lines; its chatter dropped."""
    target = logging.getLogger("deniable")
    uvicorn_log = logging.getLogger("uvicorn")
    uvicorn_log.handlers[:] = target.handlers
    uvicorn_log.setLevel(logging.WARNING)
    uvicorn_log.propagate = not target.handlers


def start_web(
    options: WebOptions,
    service: AggregatorService,
    executor: Executor,
    admission: Admission,
    gate: ReportGate,
    health: Health,
    *,
    limits: ServerLimits,
    tls: ServerTls | None,
    page: Page | None = None,
) -> WebServer:
    """Serve the participant's RPCs, the page and ``/healthz`` on ``options.listen``.

    The work of every call runs on ``executor`` (the daemon's workers), under the same
    ``admission`` and ``gate`` as the gRPC port, through the same ``service``.

    Raises:
        WebListenError: the address cannot be bound, the page's files cannot be read, or
            the server did not start.
    """
    if page is None:
        try:
            page = Page.load()
        except OSError as error:
            problem = f"--web {options.listen}: the page cannot be read: {error}"
            raise WebListenError(problem) from None
    rpcs = ParticipantRpcs(service, executor, admission, gate)
    app = WebApp(
        connect_app(rpcs, limits.max_message_bytes), page,
        CorsPolicy.of(options.origins), health,
        max_message_bytes=limits.max_message_bytes,
        max_concurrent_rpcs=limits.max_concurrent_rpcs,
    )  # fmt: skip
    context = tls.ssl_context() if tls is not None else None
    _route_uvicorn_logs()
    server = WebServer(app, _bind(options.listen), limits)
    try:
        server.start(context)
    except BaseException:
        server.sock.close()
        raise
    return server
