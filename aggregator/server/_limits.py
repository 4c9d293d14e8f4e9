"""The daemon's resource limits and connection management, with their defaults in one place."""

from __future__ import annotations

from dataclasses import dataclass, fields

from deniable.aggregator.server._service import MAX_BATCH
from deniable.shared.transport import CHANNEL_KEEPALIVE

__all__ = ["DECODE_EXTRA", "LimitError", "ServerLimits"]

_GRPC_INT_MAX = 2**31 - 1  # channel arguments are C ints
MIB = 1 << 20
# A request being handled takes about this many times its size more while it is decoded
# and stored: 7.6 measured for a full batch of the largest reports (6.3 for four at once).
DECODE_EXTRA = 8
CLIENT_KEEPALIVE_TIME_MS = dict(CHANNEL_KEEPALIVE)["grpc.keepalive_time_ms"]


class LimitError(ValueError):
    """A limit outside its range; ``field`` names it (``max_batch`` is ``--max-batch``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class ServerLimits:
    """What one daemon accepts at once, and how it manages connections (docs/security.md).

    Attributes:
        max_message_bytes: largest request or response; a bigger request is refused
            with RESOURCE_EXHAUSTED before it is parsed. 4 MiB holds a full batch of
            10,000 reports of the largest kind (OUE over 1,024 options with 128-character
            ids: 3,620,000 bytes; 4,100,515 with the longest survey id the wire allows).
        max_batch: most reports in one SubmitReports; more: RESOURCE_EXHAUSTED.
        max_concurrent_rpcs: calls in the server at once, running or queued for a
            worker (health checks included); beyond it: RESOURCE_EXHAUSTED at once.
            A call whose request has not arrived yet counts too, but holds no worker.
        max_inflight_bytes: request bytes held at once by the calls being handled
            (queued for a worker included); a request that would pass it is refused
            with RESOURCE_EXHAUSTED. At least ``max_message_bytes``.
        max_connections: connections open at once; a connection beyond it is closed as
            soon as it is accepted (the client sees UNAVAILABLE, or reconnects).
        calls_per_connection: calls open at once on one connection (HTTP/2
            SETTINGS_MAX_CONCURRENT_STREAMS); a client's further calls wait on its side,
            nothing of them sent.
        stream_window_bytes: the HTTP/2 flow-control window of a call that the daemon has
            not taken up yet: what a client may send of a request before the daemon asks
            for it (then the window opens to the whole message). Fixed: BDP probing, which
            would grow it to 4 MiB and more, is off.
        workers: threads that run the calls' work once their request has arrived;
            the rest wait in a queue.
        keepalive_time_ms: the server pings a connection quiet for this long ...
        keepalive_timeout_ms: ... and closes it if the ack does not come within this.
        min_ping_interval_ms: the shortest interval between a client's pings that the
            server tolerates (fewer than 3 faster pings; then GOAWAY too_many_pings).
            At most the client's keepalive interval, so deniable's own clients never
            get that GOAWAY.
        max_connection_idle_ms: a connection without a call for this long is closed
            gracefully (GOAWAY); the client reconnects on its next call.
        max_connection_age_ms: every connection is closed gracefully after this long,
            so that clients spread over several daemons behind a load balancer.
        max_connection_age_grace_ms: how long calls in flight on such a connection may
            still run.
    """

    max_message_bytes: int = 4 * MIB
    max_batch: int = MAX_BATCH
    max_concurrent_rpcs: int = 128
    max_inflight_bytes: int = 8 * MIB
    max_connections: int = 256
    calls_per_connection: int = 16
    stream_window_bytes: int = 16 * 1024
    workers: int = 16
    keepalive_time_ms: int = 60_000
    keepalive_timeout_ms: int = 20_000
    min_ping_interval_ms: int = 15_000
    max_connection_idle_ms: int = 300_000
    max_connection_age_ms: int = 1_800_000
    max_connection_age_grace_ms: int = 30_000

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise LimitError(item.name, f"must be an integer, got {value!r}")
            if not 1 <= value <= _GRPC_INT_MAX:
                raise LimitError(item.name, f"must be between 1 and {_GRPC_INT_MAX}, got {value}")
        if self.max_message_bytes < 1024:
            raise LimitError(
                "max_message_bytes", f"must be at least 1024, got {self.max_message_bytes}"
            )
        if self.max_inflight_bytes < self.max_message_bytes:
            raise LimitError(
                "max_inflight_bytes",
                f"must be at least the largest message, {self.max_message_bytes} "
                f"(--max-message-bytes), got {self.max_inflight_bytes}",
            )
        if self.stream_window_bytes < 1024:
            raise LimitError(
                "stream_window_bytes", f"must be at least 1024, got {self.stream_window_bytes}"
            )
        if self.min_ping_interval_ms > CLIENT_KEEPALIVE_TIME_MS:
            raise LimitError(
                "min_ping_interval_ms",
                f"{self.min_ping_interval_ms} is above the clients' keepalive interval of "
                f"{CLIENT_KEEPALIVE_TIME_MS} ms: they would be sent GOAWAY too_many_pings",
            )

    def held_bytes_bound(self) -> int:
        """The most request bytes the daemon holds at once (docs/security.md, "Memory").

        A call taken up (at most ``max_concurrent_rpcs``) holds its request, at most
        ``max_message_bytes``, while gRPC reads it and while it is handled; every other
        open call (at most ``max_connections`` times ``calls_per_connection``) has
        sent at most its window; the requests being handled, at most
        ``max_inflight_bytes``, take about :data:`DECODE_EXTRA` times their size more
        while they are decoded and stored.
        """
        return (
            self.max_concurrent_rpcs * self.max_message_bytes
            + self.max_connections * self.calls_per_connection * self.stream_window_bytes
            + self.max_inflight_bytes * DECODE_EXTRA
        )

    def channel_options(self) -> list[tuple[str, int]]:
        """The gRPC server options that enforce these limits."""
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            ("grpc.max_allowed_incoming_connections", self.max_connections),
            ("grpc.max_concurrent_streams", self.calls_per_connection),
            # A fixed window per call: with BDP probing on, gRPC grows it to 4 MiB or more,
            # and reads whole requests of calls the daemon has not taken up (or refuses).
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", self.stream_window_bytes),
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", self.keepalive_timeout_ms),
            # Clients ping between calls too (deniable.shared.transport.CHANNEL_KEEPALIVE):
            # allow it, and do not cap the pings the server itself sends on a quiet connection.
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_ping_interval_without_data_ms", self.min_ping_interval_ms),
            ("grpc.http2.max_ping_strikes", 2),
            ("grpc.max_connection_idle_ms", self.max_connection_idle_ms),
            ("grpc.max_connection_age_ms", self.max_connection_age_ms),
            ("grpc.max_connection_age_grace_ms", self.max_connection_age_grace_ms),
        ]
