"""The curator's daemon: the Curator gRPC service over the transport-free CuratorService."""

from __future__ import annotations

from deniable.aggregator.server.curator._client import CuratorClient
from deniable.aggregator.server.curator._lifecycle import RunningCurator, start_curator
from deniable.aggregator.server.curator._servicer import ADMIN_METHODS, CuratorServicer

__all__ = ["ADMIN_METHODS", "CuratorClient", "CuratorServicer", "RunningCurator", "start_curator"]
