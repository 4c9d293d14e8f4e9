"""Databases filled through a real daemon on either backend, and what they estimate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests._enrolled import stepped_without_enrollment
from tests.aggregator.analysis._check_data import SPECS, question, reports
from tests.aggregator.server.test_release_gate import reports as bits
from tests.conftest import ADMIN_TOKEN, binary_question

# yes/no, categorical, numeric. Not Duchi: its sum of squares (in units of 2^-51) overflows
# the BIGINT sums of the PostgreSQL backend's tally rows, which refuses such reports.
KINDS = ("yesno", "grr", "laplace")


@dataclass
class Filled:
    """The surveys of a filled database, in creation order, and its enrollment tokens."""

    surveys: list[pb.Survey] = field(default_factory=list)
    sent: dict[tuple[str, str], list[pb.Report]] = field(default_factory=dict)  # distinct
    used: str = ""  # answered every question of the enrolled survey
    unused: str = ""


@contextmanager
def running(url: str) -> Iterator[tuple[RunningServer, AggregatorClient]]:
    """An in-process daemon on the database at ``url``, and an admin client of it."""
    server = start_server(open_storage(url), ADMIN_TOKEN, "127.0.0.1:0")
    try:
        with AggregatorClient(server.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            yield server, client
    finally:
        server.stop(grace=1.0)


@contextmanager
def daemon(url: str) -> Iterator[AggregatorClient]:
    """An admin client of an in-process daemon on the database at ``url``."""
    with running(url) as (_, client):
        yield client


def fill(url: str, *, enrollment: bool) -> Filled:
    """Kinds of questions (with a resend), a stepped survey, a closed one, and enrollment."""
    filled = Filled()
    with running(url) as (server, client):
        kinds = client.create_survey("Kinds", [question(q, SPECS[q]) for q in KINDS])
        for seed, qid in enumerate(KINDS):
            sent = reports(kinds, qid, 30, seed)
            client.submit_reports(sent[:20])
            client.submit_reports(sent[10:])  # half a resend: counted once
            filled.sent[kinds.id, qid] = sent
        # Stepped without enrollment, as older releases made them: migrate and check keep them.
        stepped = stepped_without_enrollment(server.storage, "Stepped", [binary_question("q1")], 10)
        for start in (0, 7, 14):  # released at 14 of 21 stored
            client.submit_reports(bits(stepped, "q1", 21, "s")[start : start + 7])
        closed = client.create_survey("Closed", [question("grr", SPECS["grr"])])
        client.submit_reports(reports(closed, "grr", 12, 7))
        client.close_survey(closed.id)
        filled.surveys = [kinds, stepped, closed]
        if enrollment:
            enrolled = client.create_survey(
                "Enrolled", [binary_question("q1"), binary_question("q2")], enrollment_required=True
            )
            filled.used, filled.unused = client.issue_tokens(enrolled.id, 2)
            sent = bits(enrolled, "q1", 1, "e1") + bits(enrolled, "q2", 1, "e2")
            client.submit_reports(sent, enrollment_token=filled.used)
            filled.surveys.append(enrolled)
    return filled


def estimates(url: str, filled: Filled) -> dict[tuple[str, str], pb.Estimate]:
    """Every question's estimate, and the surveys as listed, from a daemon on ``url``."""
    found: dict[tuple[str, str], pb.Estimate] = {}
    with daemon(url) as client:
        for survey in filled.surveys:
            for q in survey.questions:
                found[survey.id, q.id] = client.get_estimate(survey.id, q.id)
    return found


def listed(url: str) -> list[tuple[str, int, int, int]]:
    """Each survey's id, state, reports and tokens issued, in creation order."""
    storage = open_storage(url)
    try:
        return [(s.id, s.state, s.reports, s.tokens_issued) for s in storage.list_surveys(True)]
    finally:
        storage.close()
