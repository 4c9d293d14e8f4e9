"""A full disk: UNAVAILABLE naming it, reads still served, ingest resumes alone, nothing lost."""

# The daemon's database lives on a real 12 MiB tmpfs that the test fills with a file, so
# SQLite meets ENOSPC as on a real full disk. Mounting needs root (CI runs as root).

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, Daemon, binary_question, start_daemon

MAX_BATCHES = 400  # the preallocated write-ahead log holds about 190 of them


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Fill the disk with one file; its path, to free the space again."""
    filler = disk / "filler"
    with filler.open("wb") as handle, pytest.raises(OSError, match="No space left") as full:  # noqa: PT012
        while True:
            handle.write(bytes(1 << 16))
            handle.flush()
    assert full.value.errno == errno.ENOSPC
    return filler


def batch(survey: pb.Survey, prefix: str, n: int = 1000) -> list[pb.Report]:
    question = survey.questions[0]
    return [
        pb.Report(report_id=f"{prefix}-{i:06d}", survey_id=survey.id, question_id=question.id,
                  mechanism=question.mechanism, bit=i % 3 == 0)
        for i in range(n)
    ]  # fmt: skip


def serving(daemon: Daemon) -> int:
    with grpc.insecure_channel(daemon.address) as channel:
        request = health_pb2.HealthCheckRequest(service="")
        return int(health_pb2_grpc.HealthStub(channel).Check(request, timeout=10).status)


def test_a_full_disk_is_unavailable_and_ingest_resumes_with_nothing_lost_or_counted_twice(
    tmp_path: Path, small_disk: Path
) -> None:
    # No watermark: the disk is filled on purpose (docs/security.md: --min-free-space).
    daemon = start_daemon(tmp_path, f"sqlite:///{small_disk / 'agg.db'}", ["--min-free-space", "0"])
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            survey = client.create_survey("Disk", [binary_question("q")])
            filler = fill(small_disk)
            acknowledged, refused = 0, None
            for k in range(MAX_BATCHES):
                try:
                    acknowledged += client.submit_reports(batch(survey, f"b{k}")).stored
                except RemoteError as failure:
                    refused = (k, failure)
                    break
            assert refused is not None, "the disk never filled up"
            k, first = refused
            assert first.code == "UNAVAILABLE", first
            assert first.details.startswith("the aggregator's database is full (database or disk")
            assert "nothing of this request was stored; retry later" in first.details
            # Still up: health, surveys and estimates are served; the refused batch is absent.
            assert serving(daemon) == health_pb2.HealthCheckResponse.SERVING
            assert client.get_survey(survey.id).reports == acknowledged
            assert client.get_estimate(survey.id, "q").n == acknowledged
            with pytest.raises(RemoteError) as again:
                client.submit_reports(batch(survey, f"b{k}"))
            assert again.value.code == "UNAVAILABLE"

        # A client that retries with backoff gets through once space is freed meanwhile.
        def free_space(seconds: float) -> None:
            if filler.exists():
                filler.unlink()

        with AggregatorClient(daemon.address, attempts=4, sleep=free_space) as retrying:
            resumed = retrying.submit_reports(batch(survey, f"b{k}"))
            assert (resumed.stored, resumed.already_stored) == (1000, 0)
            resent = retrying.submit_reports(batch(survey, "b0"))  # acknowledged before
            assert (resent.stored, resent.already_stored) == (0, 1000)
            assert retrying.get_estimate(survey.id, "q").n == acknowledged + 1000
    finally:
        assert daemon.stop() == 0
    log = [json.loads(line) for line in daemon.stderr_path.read_text().splitlines()]
    assert not [r for r in log if r.get("level") == "error"], "errors logged"
    assert "Traceback" not in daemon.stderr_path.read_text()
    assert os.path.ismount(small_disk)
