"""The web port (``serve --web``): the participant's RPCs over Connect, the page, health.

Importing this package loads neither uvicorn nor connectrpc: ``start_server`` imports the
server (``_serve``) only for a daemon that serves the web port.
"""

from __future__ import annotations

from deniable.aggregator.server.web._headers import CSP, SECURITY_HEADERS, CorsPolicy, check_origin
from deniable.aggregator.server.web._options import (
    PARTICIPANT_RPCS,
    WebListenError,
    WebOptions,
)

__all__ = [
    "CSP",
    "PARTICIPANT_RPCS",
    "SECURITY_HEADERS",
    "CorsPolicy",
    "WebListenError",
    "WebOptions",
    "check_origin",
]
