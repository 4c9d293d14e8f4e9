"""Admission control: a cap on the request bytes the daemon holds at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from deniable.shared.errors import ResourceExhausted

__all__ = ["Admission"]


class Admission:
    """Counts the bytes of the requests being handled; refuses one that would pass the cap.

    A request is counted from when its handler starts until its reply is sent, waiting
    for a worker included. The cap bounds the memory that a burst of large requests can
    pin (each is parsed into a few times its size while it is handled), so that a burst
    is refused with RESOURCE_EXHAUSTED instead of pushing the daemon into swap. A request
    on its own is always admitted (it is at most the largest message, which is smaller
    than the cap).

    Example:
        >>> admission = Admission(100)
        >>> with admission.admit("SubmitReports", 60):
        ...     admission.held
        60
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()

    @contextmanager
    def admit(self, method: str, size: int) -> Iterator[None]:
        """Hold ``size`` bytes for the duration, or raise ResourceExhausted naming the cap."""
        with self._lock:
            if self.held and self.held + size > self.max_bytes:
                raise ResourceExhausted(
                    f"{method}: the aggregator is handling {self.held:,} bytes of requests, and "
                    f"this one ({size:,} bytes) would take it past its limit of "
                    f"{self.max_bytes:,} (--max-inflight-bytes); nothing done, retry later"
                )
            self.held += size
            self.peak = max(self.peak, self.held)
        try:
            yield
        finally:
            with self._lock:
                self.held -= size
