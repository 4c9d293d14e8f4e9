"""What a caller without the admin token sees: open surveys, stepped counts as released."""

from __future__ import annotations

from deniable.aggregator.storage import Storage
from deniable.shared.errors import Unauthenticated
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["check_listing", "public_view"]

CLOSED_NEEDS_TOKEN = (
    "include_closed: closed surveys are listed only to the admin; send metadata "
    "'authorization: Bearer <token>' with the aggregator's token, or list the open ones"
)


def check_listing(include_closed: bool, admin: bool) -> None:
    """Closed surveys are listed to the admin token only: Unauthenticated otherwise.

    A refusal rather than a quiet list of the open ones, so that a script that asked for
    every survey is never led to believe there is no closed one.
    """
    if include_closed and not admin:
        raise Unauthenticated(CLOSED_NEEDS_TOKEN)


def public_view(survey: pb.Survey, storage: Storage) -> pb.Survey:
    """The survey as a caller without the admin token sees it (changed in place).

    A stepped survey (``release_step`` > 0) withholds its live report count: it shows the
    reports its questions' last releases are from (their sum), which moves only in release
    steps and tells nothing the released estimates do not, and sets
    ``reports_as_released``. Otherwise one could call it before and after one person's
    submission and learn that person's batch, defeating the steps (docs/security.md).
    Any other survey is shown as stored: every estimate of it is from all its reports.
    """
    if survey.release_step == 0:
        return survey
    released = 0
    for question in survey.questions:
        tally = storage.released(survey.id, question.id)
        released += tally.n if tally is not None else 0
    survey.reports = released
    survey.reports_as_released = True
    return survey
