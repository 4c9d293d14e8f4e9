"""Attack: fill the daemon's disk with reports until nothing else can be written.

Against the code before the fix, reports were stored until the disk was full. Now
below the free-space watermark new reports are refused with RESOURCE_EXHAUSTED, while
estimates, listings and exports go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.server._peer_limits import PeerLimit
from deniable.aggregator.server._report_gate import IngestLimits
from deniable.aggregator.server._watermark import PROBE_EVERY_S, MinFree, Usage
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, binary_question

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


def batch(survey: pb.Survey, prefix: str, count: int) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(report_id=f"{prefix}-{i}", survey_id=survey.id, question_id=question.id,
                  mechanism=question.mechanism, bit=i % 2 == 0)
        for i in range(count)
    ]  # fmt: skip


def test_below_the_watermark_reports_are_refused_and_reads_go_on(
    watched: RunningServer, disk: Disk, tmp_path: Path
) -> None:
    with AggregatorClient(watched.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
        survey = admin.create_survey("Disk", [binary_question("q")])
        assert admin.submit_reports(batch(survey, "a", 10)).stored == 10
        assert disk.asked == [str(tmp_path.resolve())]  # the database's folder
        disk.set_free(GIB - 1)
        with pytest.raises(RemoteError) as refused:
            admin.submit_reports(batch(survey, "b", 10))  # the admin token too
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
        assert admin.submit_reports(batch(survey, "b", 10)).stored == 10
