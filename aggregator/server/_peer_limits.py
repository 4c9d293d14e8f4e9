"""Per-peer token buckets on stored reports: one address cannot fill the database alone."""

from __future__ import annotations

import functools
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from deniable.aggregator.server._limits import LimitError
from deniable.shared.errors import ResourceExhausted

__all__ = ["MAX_PEERS", "PeerBuckets", "PeerLimit", "peer_key"]

MAX_PEERS = 65_536
"""Buckets kept at most (14 MB measured); the one used least recently goes first."""
IPV6_PREFIX = 64  # one IPv6 subscriber usually holds a whole /64: it is one peer


@functools.lru_cache(maxsize=4096)  # a connection's calls share their peer string
def peer_key(peer: str) -> str:
    """The peer a call is charged to, from gRPC's ``context.peer()``.

    An IPv4 address as is (``ipv4:203.0.113.7:51234`` is ``203.0.113.7``); an IPv6
    address by its /64 (``ipv6:%5B2001:db8::1%5D:5``, as gRPC writes it, or with the
    brackets themselves, is ``2001:db8::/64``), since a host that
    has one address of a /64 can use them all; every caller on a Unix socket is one peer,
    ``unix``. The port never counts: a client reconnecting from a new port is the same
    peer. An IPv4 address mapped into IPv6 counts as the IPv4 address.

    Example:
        >>> peer_key("ipv6:[2001:db8:1:2:3:4:5:6]:443")
        '2001:db8:1:2::/64'
    """
    scheme, _, rest = unquote(peer).partition(":")  # gRPC sends ipv6:%5B::1%5D:PORT
    if scheme == "ipv4":
        return rest.rpartition(":")[0] or rest
    if scheme == "ipv6":
        host = rest.rpartition(":")[0].strip("[]") if rest.startswith("[") else rest
        try:
            address = ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:  # never from gRPC; charged as it stands, port and all
            return peer
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/{IPV6_PREFIX}", strict=False))
    if scheme == "unix":
        return "unix"
    return peer


@dataclass(frozen=True)
class PeerLimit:
    """Reports a peer without a credential may store: a token bucket per peer address.

    Attributes:
        reports_per_second: the rate a peer's bucket refills at (0: no per-peer limit).
        burst: the bucket's size, the most reports a peer may send at once after a quiet
            spell (0: no per-peer limit); a batch larger than this is always refused.
    """

    reports_per_second: float = 20.0
    burst: int = 2_000

    def __post_init__(self) -> None:
        rate = self.reports_per_second
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise LimitError("peer_reports_per_second", f"must be a number, got {rate!r}")
        if not math.isfinite(rate) or rate < 0:
            raise LimitError("peer_reports_per_second", f"must be a number >= 0, got {rate!r}")
        burst = self.burst
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
            raise LimitError("peer_report_burst", f"must be an integer >= 0, got {burst!r}")

    @property
    def enabled(self) -> bool:
        """Whether reports are limited per peer (both figures above 0)."""
        return self.reports_per_second > 0 and self.burst > 0

    @classmethod
    def off(cls) -> PeerLimit:
        """No per-peer limit."""
        return cls(0.0, 0)


class PeerBuckets:
    """One token bucket per peer, kept for at most :data:`MAX_PEERS` peers.

    A bucket starts full (``burst`` tokens) and refills at ``reports_per_second``; a batch
    of n reports takes n tokens, or is refused whole, taking none. A peer whose bucket
    has refilled is forgotten, so is the one used least recently once ``max_peers`` are
    kept: either starts full again, as a peer never seen does, so forgetting one gives no
    more than a fresh address would (the limit is per address, not a total).

    Example:
        >>> now = [0.0]
        >>> buckets = PeerBuckets(PeerLimit(10.0, 100), clock=lambda: now[0])
        >>> buckets.take("ipv4:192.0.2.1:5000", 100)
        >>> buckets.left("ipv4:192.0.2.1:5001")
        0.0
        >>> now[0] = 2.5
        >>> buckets.left("ipv4:192.0.2.1:5001")
        25.0
    """

    def __init__(
        self,
        limit: PeerLimit,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_peers: int = MAX_PEERS,
    ) -> None:
        self.limit = limit
        self.clock = clock
        self.max_peers = max_peers
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, when
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def _tokens(self, key: str, now: float) -> float:
        """The tokens of ``key``'s bucket at ``now`` (refilled since it was last used)."""
        kept = self._buckets.get(key)
        if kept is None:
            return float(self.limit.burst)
        tokens, when = kept
        return min(float(self.limit.burst), tokens + (now - when) * self.limit.reports_per_second)

    def left(self, peer: str) -> float:
        """The tokens ``peer`` has now (reports it may send at once)."""
        with self._lock:
            return self._tokens(peer_key(peer), self.clock())

    def take(self, peer: str, reports: int) -> None:
        """Take ``reports`` tokens from the peer's bucket, or refuse the batch taking none.

        Raises:
            ResourceExhausted: the batch is larger than the burst, or than what the
                peer's bucket holds now (naming when it will hold enough).
        """
        limit = self.limit
        key = peer_key(peer)
        with self._lock:
            now = self.clock()
            tokens = self._tokens(key, now)
            if reports > tokens:
                raise ResourceExhausted(_refusal(key, reports, tokens, limit))
            self._buckets[key] = (tokens - reports, now)
            self._buckets.move_to_end(key)
            self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop the least recently used buckets that refilled, and any beyond the cap."""
        while self._buckets:
            key, (tokens, when) = next(iter(self._buckets.items()))
            full = tokens + (now - when) * self.limit.reports_per_second >= self.limit.burst
            if not full and len(self._buckets) <= self.max_peers:
                return
            del self._buckets[key]


def _refusal(key: str, reports: int, tokens: float, limit: PeerLimit) -> str:
    """The message of a refused batch: what the peer may send, and when."""
    rate = f"{limit.reports_per_second:g} reports/s, burst {limit.burst:,}"
    if reports > limit.burst:
        return (
            f"reports: a batch of {reports:,} reports is more than one peer may send at once "
            f"({rate}; --peer-report-burst): send batches of at most {limit.burst:,}; "
            "nothing stored"
        )
    wait = (reports - tokens) / limit.reports_per_second
    return (
        f"reports: peer {key} is over its report rate ({rate}; --peer-reports-per-second): "
        f"{int(tokens):,} of the batch's {reports:,} reports may be sent now, all of them "
        f"in {math.ceil(wait * 10) / 10:g} s; nothing stored, retry then"
    )
