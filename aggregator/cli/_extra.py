"""What ``deniable-aggregator`` needs beyond the participant's install (the aggregator extra)."""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRA", "INSTALL", "missing_extra"]

INSTALL = "pip install 'deniable[aggregator]'"
"""The command that installs what the aggregator needs beyond the participant's install."""

EXTRA = {"scipy": "scipy", "grpc_health": "grpcio-health-checking",
         "grpc_reflection": "grpcio-reflection", "connectrpc": "connectrpc",
         "uvicorn": "uvicorn"}  # fmt: skip
"""The aggregator extra's modules, each with its distribution (pyproject.toml)."""


def missing_extra() -> list[str]:
    """The distributions of the aggregator extra that are not installed (found, not imported)."""
    return [name for module, name in EXTRA.items() if importlib.util.find_spec(module) is None]
