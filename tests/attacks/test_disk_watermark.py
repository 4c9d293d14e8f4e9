"""Attack: fill the daemon's disk with reports until nothing else can be written.

Against the code before the fix, reports were stored until the disk was full. Now below
the free-space watermark (``serve --min-free-space``, 1 GiB by default) new reports are
refused with RESOURCE_EXHAUSTED while estimates, listings and exports go on. A watermark
of 1000 TiB stands for a disk that is nearly full: no disk has that much free.
(``tests/aggregator/server/test_report_limits.py`` moves a probed disk across the mark.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from tests.aggregator.server.test_release_gate import reports as question_reports
from tests.conftest import ADMIN_TOKEN, binary_question, start_daemon


def test_reports_are_refused_below_the_watermark_and_reads_go_on(tmp_path: Path) -> None:
    # As a variable, so that a daemon without the option (before the fix) still starts.
    daemon = start_daemon(tmp_path, env={"DENIABLE_AGGREGATOR_SERVE_MIN_FREE_SPACE": "1000TiB"})
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = admin.create_survey("Disk", [binary_question("q")])
            with (
                AggregatorClient(daemon.address, attempts=1) as filler,
                pytest.raises(RemoteError) as refused,
            ):
                filler.submit_reports(question_reports(survey, "q", 1_000, "a-"))
            assert refused.value.code == "RESOURCE_EXHAUSTED"
            assert "below the aggregator's watermark of 1000.0 TiB" in refused.value.details
            assert admin.get_survey(survey.id).reports == 0
            assert [s.id for s in admin.list_surveys(include_closed=True)] == [survey.id]
            assert list(admin.export_reports(survey.id)) == []
    finally:
        daemon.stop()
