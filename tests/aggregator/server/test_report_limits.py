"""Per-peer report buckets, the free-space watermark's sizes, and serve's options for both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._auth import AdminToken
from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._limits import LimitError
from deniable.aggregator.server._peer_limits import PeerBuckets, PeerLimit, peer_key
from deniable.aggregator.server._report_gate import IngestLimits
from deniable.aggregator.server._watermark import PROBE_EVERY_S, FreeSpace, MinFree, Usage
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.errors import ResourceExhausted
from tests.aggregator.server.test_release_gate import reports as question_reports
from tests.conftest import ADMIN_TOKEN, binary_question, has_ipv6_loopback

PEER = "ipv4:198.51.100.7:40000"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        ("ipv4:198.51.100.7:40000", "198.51.100.7"),
        ("ipv6:[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"),
        ("ipv6:%5B2001:db8:1:2:3:4:5:6%5D:443", "2001:db8:1:2::/64"),  # as gRPC writes it
        ("ipv6:%5B::1%5D:48928", "::/64"),
        ("ipv6:[2001:db8:1:2::9]:1", "2001:db8:1:2::/64"),
        ("ipv6:[::ffff:192.0.2.5]:80", "192.0.2.5"),
        ("ipv6:[::1]:5", "::/64"),
        ("unix:/run/deniable.sock", "unix"),
        ("unix-abstract:x", "unix-abstract:x"),
    ],
)
def test_peer_keys(peer: str, key: str) -> None:
    assert peer_key(peer) == key


def test_a_bucket_refills_at_its_rate_and_refuses_without_taking() -> None:
    clock = Clock()
    buckets = PeerBuckets(PeerLimit(10.0, 100), clock=clock)
    buckets.take(PEER, 100)
    with pytest.raises(ResourceExhausted) as refused:
        buckets.take("ipv4:198.51.100.7:40001", 5)  # another port: the same peer
    assert refused.value.message == (
        "reports: peer 198.51.100.7 is over its report rate (10 reports/s, burst 100; "
        "--peer-reports-per-second): 0 of the batch's 5 reports may be sent now, all of them "
        "in 0.5 s; nothing stored, retry then"
    )
    clock.now += 0.5
    buckets.take(PEER, 5)
    assert buckets.left(PEER) == 0.0
    buckets.take("ipv4:198.51.100.8:1", 100)  # another peer has its own bucket
    clock.now += 1000
    assert buckets.left(PEER) == 100  # never more than the burst


def test_a_batch_larger_than_the_burst_is_always_refused() -> None:
    buckets = PeerBuckets(PeerLimit(10.0, 100), clock=Clock())
    with pytest.raises(ResourceExhausted, match="send batches of at most 100"):
        buckets.take(PEER, 101)
    assert buckets.left(PEER) == 100


def test_the_buckets_memory_is_bounded() -> None:
    clock = Clock()
    buckets = PeerBuckets(PeerLimit(1.0, 10), clock=clock, max_peers=3)
    for host in range(10):
        buckets.take(f"ipv4:192.0.2.{host}:1", 10)
    assert len(buckets) == 3  # the least recently used went first
    clock.now += 10  # every bucket refilled: forgotten at the next take
    buckets.take(PEER, 1)
    assert len(buckets) == 1


@pytest.mark.parametrize(
    ("rate", "burst", "field"),
    [(-1.0, 10, "peer_reports_per_second"), (float("nan"), 10, "peer_reports_per_second"),
     (1.0, -1, "peer_report_burst")],
)  # fmt: skip
def test_bad_peer_limits(rate: float, burst: int, field: str) -> None:
    with pytest.raises(LimitError) as raised:
        PeerLimit(rate, burst)
    assert raised.value.field == field


def test_zero_turns_the_peer_limit_off() -> None:
    assert PeerLimit() == PeerLimit(20.0, 2_000)  # serve's defaults, as documented
    assert not PeerLimit(0.0, 10).enabled
    assert not PeerLimit(5.0, 0).enabled
    assert PeerLimit().enabled


@pytest.mark.parametrize(
    ("text", "size", "share"),
    [("1GiB", 1 << 30, 0.0), ("500MB", 500_000_000, 0.0), ("1048576", 1 << 20, 0.0),
     ("1.5g", 1_500_000_000, 0.0), ("5%", 0, 0.05), ("0", 0, 0.0), (" 2 KiB ", 2048, 0.0)],
)  # fmt: skip
def test_min_free_space_sizes(text: str, size: int, share: float) -> None:
    parsed = MinFree.parse(text)
    assert (parsed.size, parsed.share) == (size, share)
    assert parsed.enabled == (size > 0 or share > 0)


@pytest.mark.parametrize("text", ["", "-1", "1 parsec", "100%", "GiB", "1e9"])
def test_bad_min_free_space(text: str) -> None:
    with pytest.raises(LimitError) as raised:
        MinFree.parse(text)
    assert raised.value.field == "min_free_space"


def test_a_share_of_the_disk_is_measured_on_its_size() -> None:
    usage = Usage(total=1000, used=960, free=40)
    watermark = FreeSpace("/db", MinFree.parse("5%"), probe=lambda path: usage)
    with pytest.raises(ResourceExhausted, match="has 40 bytes free, below the aggregator's"):
        watermark.check()
    FreeSpace("/db", MinFree.parse("4%"), probe=lambda path: usage).check()


def test_a_disk_that_cannot_be_probed_is_not_held_against_a_batch() -> None:
    def gone(path: str) -> Usage:
        raise FileNotFoundError(path)

    FreeSpace("/gone", MinFree.parse("1GiB"), probe=gone).check()


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[tuple[RunningServer, Clock]]:
    clock = Clock()
    ingest = IngestLimits(PeerLimit(10.0, 100), MinFree.parse("0"), clock=clock)
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "127.0.0.1:0", ingest=ingest
    )
    yield running, clock
    running.stop(grace=1.0)


def test_a_peer_over_its_rate_is_refused_over_grpc_and_nothing_is_stored(
    limited: tuple[RunningServer, Clock],
) -> None:
    running, clock = limited
    with (
        AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as admin,
        AggregatorClient(running.address, attempts=1) as peer,
    ):
        survey = admin.create_survey("S", [binary_question("q")])
        assert peer.submit_reports(question_reports(survey, "q", 80, "a-")).stored == 80
        with pytest.raises(RemoteError) as refused:
            peer.submit_reports(question_reports(survey, "q", 30, "b-"))
        assert refused.value.status == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.details.startswith("reports: peer 127.0.0.1 is over its report rate")
        assert "in 1 s; nothing stored" in refused.value.details
        assert admin.get_survey(survey.id).reports == 80
        clock.now += 1.0
        assert peer.submit_reports(question_reports(survey, "q", 30, "b-")).stored == 30
        # Exempt: the admin token, and batches with an enrollment token.
        assert admin.submit_reports(question_reports(survey, "q", 500, "c-")).stored == 500
        enrolled = admin.create_survey("E", [binary_question("q")], enrollment_required=True)
        (token,) = admin.issue_tokens(enrolled.id, 1)
        assert (
            peer.submit_reports(
                question_reports(enrolled, "q", 1, "e-"), enrollment_token=token
            ).stored
            == 1
        )


# --- the watermark over gRPC, with a probe the test sets ---

GIB = 1 << 30


class Disk:
    """A filesystem whose free space the test sets (the watermark's probe), and a clock."""

    def __init__(self) -> None:
        self.free = 10 * GIB
        self.asked: list[str] = []
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def set_free(self, free: int) -> None:
        """Set the free space, and let the watermark's next check probe it anew."""
        self.free = free
        self.now += PROBE_EVERY_S

    def __call__(self, path: str) -> Usage:
        self.asked.append(path)
        return Usage(100 * GIB, 100 * GIB - self.free, self.free)


@pytest.fixture
def disk() -> Disk:
    return Disk()


@pytest.fixture
def watched(tmp_path: Path, disk: Disk) -> Iterator[RunningServer]:
    ingest = IngestLimits(PeerLimit.off(), MinFree.parse("1GiB"), probe=disk, clock=disk.clock)
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "127.0.0.1:0", ingest=ingest
    )
    yield running
    running.stop(grace=1.0)


def test_below_the_watermark_reports_are_refused_and_reads_go_on(
    watched: RunningServer, disk: Disk, tmp_path: Path
) -> None:
    with AggregatorClient(watched.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = admin.create_survey("Disk", [binary_question("q")])
        assert admin.submit_reports(question_reports(survey, "q", 10, "a-")).stored == 10
        assert disk.asked == [str(tmp_path.resolve())]  # the database's folder
        disk.set_free(GIB - 1)
        with pytest.raises(RemoteError) as refused:
            admin.submit_reports(question_reports(survey, "q", 10, "b-"))  # the admin token too
        assert refused.value.status == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.details.startswith(
            f"reports: the database's disk ({tmp_path.resolve()}) has 1024.0 MiB free, below "
            "the aggregator's watermark of 1.0 GiB (--min-free-space 1GiB)"
        )
        assert admin.get_survey(survey.id).reports == 10  # nothing stored
        assert admin.get_estimate(survey.id, "q").n == 10
        assert [s.id for s in admin.list_surveys(include_closed=True)] == [survey.id]
        exported = [r for chunk in admin.export_reports(survey.id) for r in chunk.reports]
        assert len(exported) == 10
        disk.set_free(2 * GIB)
        assert admin.submit_reports(question_reports(survey, "q", 10, "b-")).stored == 10


def test_the_watermark_watches_a_sqlite_file_only(tmp_path: Path) -> None:
    admin = AdminToken(ADMIN_TOKEN)
    on_file = open_storage(f"sqlite:///{tmp_path / 'a.db'}")
    in_memory = open_storage("sqlite:///:memory:")  # as PostgreSQL: no disk to see
    try:
        gate = IngestLimits().gate(admin, on_file)
        assert gate.free is not None
        assert gate.free.path == str(tmp_path.resolve())
        assert gate.peers is not None
        assert IngestLimits().gate(admin, in_memory).free is None
        off = IngestLimits.off().gate(admin, on_file)
        assert (off.free, off.peers) == (None, None)
    finally:
        on_file.close()
        in_memory.close()


@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback")
def test_a_new_connection_from_the_same_ipv6_host_shares_its_bucket(tmp_path: Path) -> None:
    ingest = IngestLimits(PeerLimit(10.0, 100), MinFree.parse("0"), clock=Clock())
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'a.db'}"), ADMIN_TOKEN, "[::1]:0", ingest=ingest
    )
    target = f"[::1]:{running.port}"
    try:
        with AggregatorClient(target, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = admin.create_survey("S", [binary_question("q")])
        with AggregatorClient(target, attempts=1) as first:
            assert first.submit_reports(question_reports(survey, "q", 80, "a-")).stored == 80
        with AggregatorClient(target, attempts=1) as second, pytest.raises(RemoteError) as caught:
            second.submit_reports(
                question_reports(survey, "q", 30, "b-")
            )  # another port, the same /64
        assert caught.value.details.startswith("reports: peer ::/64 is over its report rate")
    finally:
        running.stop(grace=1.0)
