"""Attack: one peer without credentials fills the database with a burst of reports.

Against the code before the fix, one unauthenticated client stored 100,000 reports (ten
calls of 10,000) as fast as the daemon could commit them: nothing limited a peer. With
``serve``'s defaults a peer may store a burst of 2,000 reports, then 20 per second.
"""

from __future__ import annotations

import time
from pathlib import Path

from deniable.client._remote import AggregatorClient, RemoteError
from tests.aggregator.server.test_release_gate import reports as question_reports
from tests.conftest import ADMIN_TOKEN, binary_question, start_daemon

BURST, RATE = 2_000, 20.0  # serve's defaults (PeerLimit(); checked in test_report_limits)


def test_one_peer_cannot_store_a_hundred_thousand_reports_in_a_burst(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, peer_limit=True)  # serve's defaults
    try:
        with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin:
            survey = admin.create_survey("Flood", [binary_question("q")])
            stored, refusals = 0, []
            started = time.monotonic()
            with AggregatorClient(daemon.address, attempts=1) as attacker:
                for k in range(10):  # 100,000 reports in full batches
                    try:
                        stored += attacker.submit_reports(
                            question_reports(survey, "q", 10_000, f"big{k}-")
                        ).stored
                    except RemoteError as error:
                        refusals.append(error)
                for k in range(10):  # and in batches the size of the burst
                    try:
                        stored += attacker.submit_reports(
                            question_reports(survey, "q", 2_000, f"b{k}-")
                        ).stored
                    except RemoteError as error:
                        refusals.append(error)
            elapsed = time.monotonic() - started
            assert stored <= BURST + RATE * elapsed
            assert admin.get_survey(survey.id).reports == stored  # refused: nothing stored
            assert {e.code for e in refusals} == {"RESOURCE_EXHAUSTED"}
            assert refusals[0].details.startswith(
                "reports: a batch of 10,000 reports is more than one peer may send at once"
            )
            assert refusals[-1].details.startswith(
                "reports: peer 127.0.0.1 is over its report rate (20 reports/s, burst 2,000"
            )
            # The operator's own load (the admin token) is not limited.
            admin.submit_reports(question_reports(survey, "q", 10_000, "operator-"))
    finally:
        daemon.stop()
