"""The daemon: the gRPC servicer over a transport-free service layer, auth, limits, lifecycle."""

from __future__ import annotations

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._service import AggregatorService

__all__ = ["AggregatorService", "RunningServer", "start_server"]
