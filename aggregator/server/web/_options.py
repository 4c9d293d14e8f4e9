"""What ``serve --web`` is given: the address and the origins, checked before anything starts."""

from __future__ import annotations

from dataclasses import dataclass

from deniable.aggregator.server._address import ListenAddress
from deniable.aggregator.server.web._headers import CorsPolicy

__all__ = ["PARTICIPANT_RPCS", "WebListenError", "WebOptions"]

PARTICIPANT_RPCS = ("GetSurvey", "ListSurveys", "SubmitReports")
"""What the web port serves: a participant's calls. Never the admin or analyst RPCs."""


class WebListenError(OSError):
    """The web port could not be bound or started; the message names the address."""


@dataclass(frozen=True)
class WebOptions:
    """``serve --web HOST:PORT`` and its ``--web-origin`` values.

    Attributes:
        listen: where the web port listens (port 0: any free port).
        origins: other origins whose pages may call the RPCs (CORS); none by default.
    """

    listen: ListenAddress
    origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        CorsPolicy.of(self.origins)  # ValueError naming a bad origin, before anything starts
        if self.listen.port is None:
            raise ValueError(f"--web {self.listen}: HOST:PORT; a Unix socket is not served")
