"""Building, starting and gracefully stopping the aggregator's gRPC server (grpc.aio)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent import futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server._admission import Admission
from deniable.aggregator.server._auth import AdminToken, AdminTokenInterceptor
from deniable.aggregator.server._limits import ServerLimits
from deniable.aggregator.server._report_gate import IngestLimits, ReportGate
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.server._servicer import AggregatorServicer, add_to_server
from deniable.aggregator.server._tls import ServerTls
from deniable.aggregator.server.web import WebOptions
from deniable.aggregator.storage import Storage
from deniable.shared.errors import Unavailable
from deniable.shared.wire.v1 import aggregator_pb2 as pb

if TYPE_CHECKING:
    from deniable.aggregator.server.web._serve import WebServer

__all__ = [
    "DEFAULT_LISTEN",
    "MAX_MESSAGE_BYTES",
    "RunningServer",
    "ServerLimits",
    "ServerTls",
    "start_server",
]

log = logging.getLogger("deniable.aggregator")

DEFAULT_LISTEN = "127.0.0.1:50051"
# A full batch of 10,000 yes/no reports is about 1 MB on the wire; allow headroom.
MAX_MESSAGE_BYTES = ServerLimits().max_message_bytes
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Aggregator"].full_name
HEALTH_CHECK_S = 2.0  # how often the health service asks whether the database is reachable


T = TypeVar("T")


class _DatabaseWatch:
    """A thread that turns the health service NOT_SERVING while the database is unreachable.

    Every ``period`` seconds it pings the storage (:meth:`Storage.ping`); a change is
    reported to the health service, for the whole server and for the Aggregator service.
    A load balancer then sends calls to the daemons that can store them.
    """

    def __init__(
        self, storage: Storage, health: health.aio.HealthServicer, loop: _Loop, period: float
    ) -> None:
        self.storage = storage
        self.health = health
        self.loop = loop
        self.period = period
        self.stopping = threading.Event()
        self.serving = True  # what the health service says now (the web port reads it)
        self.thread = threading.Thread(target=self._run, name="db-health", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        serving = True
        while not self.stopping.wait(self.period):
            try:
                self.storage.ping()
                reachable = True
            except Unavailable as error:
                reachable = False
                if serving:
                    log.warning("database unreachable", extra={"detail": error.message})
            if reachable == serving or self.stopping.is_set():
                continue
            serving = self.serving = reachable
            status = (
                health_pb2.HealthCheckResponse.SERVING
                if serving
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
            for name in ("", SERVICE_NAME):
                self.loop.run(self.health.set(name, status))
            if serving:
                log.info("database reachable again")

    def stop(self) -> None:
        """Stop watching (the thread ends after its current ping)."""
        self.stopping.set()
        self.thread.join(timeout=30)


class _Loop:
    """An asyncio event loop in a thread of its own, where the server's I/O runs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="grpc-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


@dataclass
class RunningServer:
    """A started server and what it owns."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    service: AggregatorService
    storage: Storage
    limits: ServerLimits = field(default_factory=ServerLimits)
    tls: ServerTls | None = None
    admission: Admission = field(
        default_factory=lambda: Admission(ServerLimits().max_inflight_bytes)
    )
    gate: ReportGate | None = None
    web: WebServer | None = None
    _loop: _Loop | None = None
    _executor: futures.ThreadPoolExecutor | None = None
    _watch: _DatabaseWatch | None = None
    _draining: bool = False

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``-style address for clients on this machine."""
        return f"127.0.0.1:{self.port}"

    @property
    def web_port(self) -> int | None:
        """The web port's bound port (``serve --web``), None without one."""
        return self.web.port if self.web is not None else None

    def serving(self) -> tuple[bool, bool]:
        """What the health checks say: SERVING or not, and whether reports are taken now.

        NOT_SERVING while draining and while the database is unreachable, as the gRPC
        health service; reports are refused below the free-space watermark.
        """
        reachable = self._watch is None or self._watch.serving
        accepting = self.gate is None or self.gate.accepting_reports()
        return reachable and not self._draining, accepting

    def enter_graceful_shutdown(self) -> None:
        """Report NOT_SERVING to health checks, on both ports (and keep serving calls)."""
        assert self._loop is not None
        self._draining = True
        self._loop.run(self.health.enter_graceful_shutdown())

    def stop(self, grace: float = 10.0) -> None:
        """Report NOT_SERVING, let in-flight calls finish, then close the database."""
        self.halt(grace)
        self.storage.close()
        log.info("stopped", extra={"port": self.port})

    def halt(self, grace: float) -> None:
        """:meth:`stop`, leaving the database open."""
        assert self._loop is not None
        assert self._executor is not None
        if self._watch is not None:
            self._watch.stop()
        self.enter_graceful_shutdown()
        if self.web is not None:  # both ports drain at once, within the same grace
            self.web.begin_stop(grace)
        self._loop.run(self.server.stop(grace))
        if self.web is not None:
            self.web.stop(grace)
        self._loop.close()
        self._executor.shutdown(wait=True)


def start_server(
    storage: Storage,
    admin_token: str,
    listen: str | ListenAddress = DEFAULT_LISTEN,
    *,
    limits: ServerLimits | None = None,
    tls: ServerTls | None = None,
    health_check_s: float = HEALTH_CHECK_S,
    ingest: IngestLimits | None = None,
    web: WebOptions | None = None,
) -> RunningServer:
    """Start serving ``storage`` on ``listen`` (port 0 picks a free port).

    The server is grpc.aio: one event loop thread receives requests and sends replies, and
    ``limits.workers`` threads run the service's work once a request has arrived, so that
    callers that are slow to send (or never send) hold no worker.

    Args:
        storage: the backend; closed by :meth:`RunningServer.stop`.
        admin_token: the bearer token admin calls must carry.
        listen: ``HOST:PORT``, ``[IPv6]:PORT`` (port 0: any free port) or ``unix:PATH``.
        limits: message size, batch size, concurrency, in-flight bytes, workers and
            keepalive (default: :class:`ServerLimits`'s documented defaults).
        tls: serve TLS (mutual TLS when it has a client CA); default plaintext.
        health_check_s: how often the health service pings the database: NOT_SERVING
            while it is unreachable, SERVING again once it answers.
        ingest: the per-peer report limit and the free-space watermark. Default: none
            (an embedded server trusts its caller); ``serve`` passes its options, on by
            default (:class:`IngestLimits`'s defaults).
        web: also serve the web port (``serve --web``): the participant's RPCs over
            Connect, the page and ``/healthz``, through the same service, workers,
            admission and gate, with the same TLS; stopped with the server.

    Raises:
        InvalidArgument: ``listen`` is not such an address (checked before anything starts).
        OSError: the address cannot be bound.
    """
    address = listen if isinstance(listen, ListenAddress) else ListenAddress.parse(listen)
    limits = limits or ServerLimits()
    admin = AdminToken(admin_token)  # checks the token before anything starts
    interceptor = AdminTokenInterceptor(admin)
    gate = (ingest or IngestLimits.off()).gate(admin, storage)
    loop = _Loop()
    executor = futures.ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="rpc")
    try:
        running = loop.run(_start(storage, interceptor, gate, address, limits, tls, executor))
    except BaseException:
        loop.close()
        executor.shutdown(wait=False)
        raise
    running._loop, running._executor, running.gate = loop, executor, gate
    running._watch = _DatabaseWatch(storage, running.health, loop, health_check_s)
    if web is not None:  # uvicorn and connectrpc are loaded only for a web port
        from deniable.aggregator.server.web._serve import start_web

        try:
            running.web = start_web(
                web, running.service, executor, running.admission, gate, running.serving,
                limits=limits, tls=tls,
            )  # fmt: skip
        except BaseException:
            running.halt(grace=0)  # the caller closes the storage, as when gRPC fails
            raise
    return running


async def _start(
    storage: Storage,
    interceptor: AdminTokenInterceptor,
    gate: ReportGate,
    address: ListenAddress,
    limits: ServerLimits,
    tls: ServerTls | None,
    executor: futures.ThreadPoolExecutor,
) -> RunningServer:
    service = AggregatorService(
        storage, max_batch=limits.max_batch, max_message_bytes=limits.max_message_bytes
    )
    admission = Admission(limits.max_inflight_bytes)
    server = grpc.aio.server(
        interceptors=[interceptor],
        options=[*limits.channel_options(), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=limits.max_concurrent_rpcs,
    )
    add_to_server(AggregatorServicer(service, executor, admission, gate), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    try:
        if tls is None:
            port = server.add_insecure_port(str(address))
        else:
            port = server.add_secure_port(str(address), tls.credentials())
    except RuntimeError as error:  # grpc.aio raises where the synchronous server returns 0
        raise OSError(f"cannot listen on {address}: {error}") from None
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, port, health_servicer, service, storage, limits, tls, admission)
