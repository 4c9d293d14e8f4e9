"""Starting and gracefully stopping the curator's gRPC server (a thread-pool server)."""

from __future__ import annotations

import logging
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from deniable.aggregator.central.curator.service import CuratorService
from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server._auth import AdminToken
from deniable.aggregator.server._limits import ServerLimits
from deniable.aggregator.server._tls import ServerTls
from deniable.aggregator.server.curator._servicer import CuratorServicer
from deniable.shared.wire.v1 import curator_pb2 as pb
from deniable.shared.wire.v1 import curator_pb2_grpc

__all__ = ["SERVICE_NAME", "RunningCurator", "start_curator"]

log = logging.getLogger("deniable.curator")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Curator"].full_name


@dataclass
class RunningCurator:
    """A started curator daemon: its server, port and service (closed by :meth:`stop`)."""

    server: grpc.Server
    port: int
    health: health.HealthServicer
    service: CuratorService

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``-style address for clients on this machine."""
        return f"127.0.0.1:{self.port}"

    def stop(self, grace: float = 10.0) -> None:
        """NOT_SERVING, let in-flight queries finish within ``grace``, then close the service."""
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        self.service.close()
        log.info("stopped", extra={"port": self.port})


def start_curator(
    service: CuratorService,
    admin_token: str,
    listen: str | ListenAddress,
    *,
    limits: ServerLimits | None = None,
    tls: ServerTls | None = None,
) -> RunningCurator:
    """Serve ``service`` on ``listen`` (port 0 picks a free port), with the aggregator's limits.

    The same message size, concurrency, connection and keepalive limits as ``serve``
    (:class:`ServerLimits`), the same TLS, a health service and reflection. Queries run on
    ``limits.workers`` threads; the engine and the ledger are thread-safe.

    Raises:
        InvalidArgument: ``listen`` is not such an address.
        OSError: the address cannot be bound.
    """
    address = listen if isinstance(listen, ListenAddress) else ListenAddress.parse(listen)
    limits = limits or ServerLimits()
    executor = futures.ThreadPoolExecutor(limits.workers, thread_name_prefix="curator")
    server = grpc.server(
        executor,
        options=[*limits.channel_options(), ("grpc.so_reuseport", 0)],
        maximum_concurrent_rpcs=limits.max_concurrent_rpcs,
    )
    curator_pb2_grpc.add_CuratorServicer_to_server(
        CuratorServicer(service, AdminToken(admin_token)), server
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    try:
        port = (
            server.add_insecure_port(str(address))
            if tls is None
            else server.add_secure_port(str(address), tls.credentials())
        )
    except RuntimeError as error:
        raise OSError(f"cannot listen on {address}: {error}") from None
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningCurator(server, port, health_servicer, service)
