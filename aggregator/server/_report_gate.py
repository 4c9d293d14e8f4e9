"""Who may store reports now: the disk's watermark, then each peer's bucket, with who is exempt."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from deniable.aggregator.server._auth import AdminToken
from deniable.aggregator.server._peer_limits import PeerBuckets, PeerLimit
from deniable.aggregator.server._watermark import DEFAULT_MIN_FREE, FreeSpace, MinFree, Usage
from deniable.aggregator.storage import Storage
from deniable.shared.errors import ResourceExhausted

__all__ = ["IngestLimits", "ReportGate"]

Context = grpc.aio.ServicerContext[Any, Any]


class ReportGate:
    """The checks a SubmitReports passes besides its own validation (docs/security.md).

    Before the batch is decoded, the free-space watermark (:class:`FreeSpace`): below it
    every batch is refused. Once it is decoded, the peer's token bucket
    (:class:`PeerBuckets`) is charged one token per report of the request, unless the
    call carries the admin token (the operator's own loads) or the batch an enrollment
    token (what a token can store is bounded already: one report per question and token,
    and a token that was not issued stores nothing). A refused batch stores nothing.

    Args:
        admin: tells calls with the admin token (None: no call has it).
        peers: the per-peer buckets (None: no per-peer limit).
        free: the watermark (None: none, e.g. PostgreSQL, whose disk is the server's).
    """

    def __init__(
        self,
        admin: AdminToken | None = None,
        peers: PeerBuckets | None = None,
        free: FreeSpace | None = None,
    ) -> None:
        self.admin = admin
        self.peers = peers
        self.free = free

    def is_admin(self, context: Context) -> bool:
        """Whether the call carries exactly the admin token."""
        return self.admin is not None and self.admin.carried_by(context.invocation_metadata())

    def before_decoding(self) -> None:
        """Raise ResourceExhausted while the database's disk is below the watermark."""
        if self.free is not None:
            self.free.check()

    def charge(self, context: Context, reports: int, enrolled: bool) -> None:
        """Take ``reports`` tokens from the caller's bucket unless it is exempt.

        Raises:
            ResourceExhausted: the peer is over its rate (nothing taken).
        """
        if self.peers is None or enrolled or self.is_admin(context):
            return
        self.peers.take(context.peer(), reports)

    def charge_peer(self, peer: str, reports: int, enrolled: bool) -> None:
        """:meth:`charge` for a call that cannot carry the admin token (the web port).

        ``peer`` is written as gRPC writes it (``ipv4:ADDRESS:PORT``,
        ``ipv6:[ADDRESS]:PORT``), so that a peer has one bucket on both ports.
        """
        if self.peers is not None and not enrolled:
            self.peers.take(peer, reports)

    def accepting_reports(self) -> bool:
        """Whether the database's disk is at or above the watermark (what health shows)."""
        if self.free is None:
            return True
        try:
            self.free.check()
        except ResourceExhausted:
            return False
        return True


@dataclass(frozen=True)
class IngestLimits:
    """The limits on storing reports, with ``serve``'s defaults (docs/security.md).

    Attributes:
        peer: the per-peer token bucket (``--peer-reports-per-second``,
            ``--peer-report-burst``).
        min_free_space: the free-space watermark (``--min-free-space``); applies to a
            SQLite database's filesystem only.
        clock: the buckets' and the watermark's clock (tests give their own).
        probe: how the free space is measured (default ``shutil.disk_usage``).
    """

    peer: PeerLimit = field(default_factory=PeerLimit)
    min_free_space: MinFree = field(default_factory=lambda: MinFree.parse(DEFAULT_MIN_FREE))
    clock: Callable[[], float] = time.monotonic
    probe: Callable[[str], Usage] | None = None

    @classmethod
    def off(cls) -> IngestLimits:
        """No per-peer limit and no watermark (what ``start_server`` applies by default)."""
        return cls(PeerLimit.off(), MinFree.parse("0"))

    def gate(self, admin: AdminToken, storage: Storage) -> ReportGate:
        """The gate that enforces these limits on ``storage``'s daemon."""
        peers = PeerBuckets(self.peer, clock=self.clock) if self.peer.enabled else None
        path = storage.disk_path()
        free = None
        if self.min_free_space.enabled and path is not None:
            free = FreeSpace(path, self.min_free_space, probe=self.probe, clock=self.clock)
        return ReportGate(admin, peers, free)
