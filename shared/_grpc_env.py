"""Quiet gRPC's C-core logging in the command-line tools; import before ``grpc``."""

from __future__ import annotations

import os

# gRPC reads GRPC_VERBOSITY once, when grpc is first imported. Unset, its core logs a
# failed TLS handshake at INFO on stderr: a second line beside the tools' one-line error,
# and a line that is not JSON among the daemon's logs. The tools default it to ERROR; set
# GRPC_VERBOSITY=INFO (or DEBUG) to see the core's own messages again.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
