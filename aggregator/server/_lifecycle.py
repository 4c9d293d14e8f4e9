"""Building, starting and gracefully stopping the aggregator's gRPC server."""

from __future__ import annotations

import logging
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server._auth import AdminTokenInterceptor
from deniable.aggregator.server._limits import ServerLimits
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.server._servicer import AggregatorServicer, add_to_server
from deniable.aggregator.server._tls import ServerTls
from deniable.aggregator.storage import Storage
from deniable.shared.wire.v1 import aggregator_pb2 as pb

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


@dataclass
class RunningServer:
    """A started server and what it owns."""

    server: grpc.Server
    port: int
    health: health.HealthServicer
    service: AggregatorService
    storage: Storage
    limits: ServerLimits = field(default_factory=ServerLimits)
    tls: ServerTls | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``-style address for clients on this machine."""
        return f"127.0.0.1:{self.port}"

    def stop(self, grace: float = 10.0) -> None:
        """Report NOT_SERVING, let in-flight calls finish, then close the database."""
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        self.storage.close()
        log.info("stopped", extra={"port": self.port})


def start_server(
    storage: Storage,
    admin_token: str,
    listen: str | ListenAddress = DEFAULT_LISTEN,
    *,
    limits: ServerLimits | None = None,
    tls: ServerTls | None = None,
) -> RunningServer:
    """Start serving ``storage`` on ``listen`` (port 0 picks a free port).

    Args:
        storage: the backend; closed by :meth:`RunningServer.stop`.
        admin_token: the bearer token admin calls must carry.
        listen: ``HOST:PORT``, ``[IPv6]:PORT`` (port 0: any free port) or ``unix:PATH``.
        limits: message size, batch size, concurrency, workers and keepalive
            (default: :class:`ServerLimits`'s documented defaults).
        tls: serve TLS (mutual TLS when it has a client CA); default plaintext.

    Raises:
        InvalidArgument: ``listen`` is not such an address (checked before anything starts).
        OSError: the address cannot be bound.
    """
    address = listen if isinstance(listen, ListenAddress) else ListenAddress.parse(listen)
    limits = limits or ServerLimits()
    service = AggregatorService(storage, max_batch=limits.max_batch)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="rpc"),
        interceptors=[AdminTokenInterceptor(admin_token)],
        options=[*limits.channel_options(), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=limits.max_concurrent_rpcs,
    )
    add_to_server(AggregatorServicer(service), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    if tls is None:
        port = server.add_insecure_port(str(address))
    else:
        port = server.add_secure_port(str(address), tls.credentials())
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, port, health_servicer, service, storage, limits, tls)
