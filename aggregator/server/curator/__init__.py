"""The curator's daemon: the Curator gRPC service over the transport-free CuratorService.

Names are imported on first use: an analyst's client loads neither the engine nor the
ledger that the daemon's lifecycle needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared._lazy import lazy_exports

if TYPE_CHECKING:
    from deniable.aggregator.server.curator._client import CuratorClient
    from deniable.aggregator.server.curator._lifecycle import RunningCurator, start_curator
    from deniable.aggregator.server.curator._servicer import ADMIN_METHODS, CuratorServicer

_EXPORTS = {
    "CuratorClient": f"{__name__}._client",
    "RunningCurator": f"{__name__}._lifecycle",
    "start_curator": f"{__name__}._lifecycle",
    "ADMIN_METHODS": f"{__name__}._servicer",
    "CuratorServicer": f"{__name__}._servicer",
}
__all__ = ["ADMIN_METHODS", "CuratorClient", "CuratorServicer", "RunningCurator", "start_curator"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
