"""A synthetic table's plan: each question's sampler, from its type, in the survey's order."""

from __future__ import annotations

from collections.abc import Mapping

from deniable.aggregator.analysis.publishing import SynthesisPlan
from deniable.aggregator.questions._base import analysis_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["plan_synthesis"]


def plan_synthesis(survey: pb.Survey, estimates: Mapping[str, pb.Estimate]) -> SynthesisPlan:
    """A sampler for every question of ``survey`` from its estimate in ``estimates``.

    Raises ValueError naming the question whose estimate is missing or does not fit it,
    or whose type has no analysis registered.
    """
    samplers = []
    for question in survey.questions:
        if question.id not in estimates:
            raise ValueError(f"no estimate of question {question.id!r}")
        try:
            analysis = analysis_for(question)
        except ValueError as error:
            raise ValueError(f"question {question.id!r}: cannot synthesize it: {error}") from None
        samplers.append(analysis.sampler(question, estimates[question.id]))
    return SynthesisPlan(tuple(samplers))
