"""The daemon: gRPC and web ports over a transport-free service layer, auth, limits, lifecycle."""

from __future__ import annotations

from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server._auth import check_token, load_or_create_token, read_token_file
from deniable.aggregator.server._lifecycle import DEFAULT_LISTEN, RunningServer, start_server
from deniable.aggregator.server._limits import LimitError, ServerLimits
from deniable.aggregator.server._logging import configure_logging
from deniable.aggregator.server._peer_limits import PeerLimit
from deniable.aggregator.server._report_gate import IngestLimits
from deniable.aggregator.server._service import AggregatorService
from deniable.aggregator.server._tls import TlsError, load_server_tls, warn_if_plaintext
from deniable.aggregator.server._watermark import DEFAULT_MIN_FREE, MinFree
from deniable.aggregator.server.web import WebListenError, WebOptions

__all__ = [
    "DEFAULT_LISTEN",
    "DEFAULT_MIN_FREE",
    "AggregatorService",
    "IngestLimits",
    "LimitError",
    "ListenAddress",
    "MinFree",
    "PeerLimit",
    "RunningServer",
    "ServerLimits",
    "TlsError",
    "WebListenError",
    "WebOptions",
    "check_token",
    "configure_logging",
    "load_or_create_token",
    "load_server_tls",
    "read_token_file",
    "start_server",
    "warn_if_plaintext",
]
