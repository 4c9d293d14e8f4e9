"""Each question's estimate from a daemon, or the reason it has none yet (report, export)."""

from __future__ import annotations

from dataclasses import dataclass

from deniable.client import AggregatorClient
from deniable.shared.transport import RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["QuestionEstimate", "question_estimates"]


@dataclass(frozen=True)
class QuestionEstimate:
    """A question and its estimate, or the reason the daemon gave for having none."""

    question: pb.Question
    estimate: pb.Estimate | None
    reason: str = ""


def question_estimates(
    client: AggregatorClient,
    survey: pb.Survey,
    confidence: float,
    method: str,
    *,
    simultaneous: bool,
    anytime: bool,
) -> list[QuestionEstimate]:
    """Ask for every question's estimate in the survey's order.

    A question the daemon refuses with FAILED_PRECONDITION (no reports yet, below the
    release gate, before the first release step) gets the daemon's reason instead; any
    other error is raised.
    """
    results = []
    for question in survey.questions:
        try:
            estimate = client.get_estimate(
                survey.id,
                question.id,
                confidence,
                method,
                simultaneous=simultaneous,
                anytime=anytime,
            )
        except RemoteError as error:
            if error.code != "FAILED_PRECONDITION":
                raise
            results.append(QuestionEstimate(question, None, error.details))
            continue
        results.append(QuestionEstimate(question, estimate))
    return results
