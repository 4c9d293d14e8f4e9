"""Stepped surveys in tests: reports sent as enrolled participants, and surveys made before."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

from deniable.aggregator.storage import Storage
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb


def enrolled(
    admin: AggregatorClient, client: AggregatorClient, reports: Sequence[pb.Report]
) -> pb.SubmitReportsResponse:
    """Submit each report as its own participant: one new token and one batch per report.

    A survey released in steps requires enrollment, so this is how its steps fill up. The
    reports must all be of one survey; the totals of the replies are returned.
    """
    (survey_id,) = {report.survey_id for report in reports}
    tokens = admin.issue_tokens(survey_id, len(reports)) if reports else []
    total = pb.SubmitReportsResponse()
    for report, token in zip(reports, tokens, strict=True):
        reply = client.submit_reports([report], enrollment_token=token)
        total.stored += reply.stored
        total.already_stored += reply.already_stored
    return total


def stepped_without_enrollment(
    storage: Storage, title: str, questions: Sequence[pb.Question], release_step: int
) -> pb.Survey:
    """A stepped survey without enrollment, as releases before one was required made them.

    The daemon no longer creates one (forged reports could fill its steps and defeat its
    central ε), but databases may still hold them: check, migrate and estimates must
    handle them. Made in the storage directly; the daemon shows it no central ε.
    """
    survey = pb.Survey(
        id=secrets.token_hex(8),
        title=title,
        questions=questions,
        state=pb.SURVEY_STATE_OPEN,
        created_unix_ms=time.time_ns() // 1_000_000,
        release_step=release_step,
    )
    storage.create_survey(survey)
    return survey
