"""Planning a question by comparing every mechanism of its type (all types but yes/no)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deniable.aggregator.analysis.planning import KindPlan, plan_question
from deniable.aggregator.questions._base import Emit, Outcome, PlanRequest
from deniable.aggregator.questions._text import kind_plan_lines
from deniable.shared.questions import question_type
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["compared_plan", "plan_outcome"]


def compared_plan(question: pb.Question, request: PlanRequest) -> KindPlan:
    """Every registered mechanism of the question's type at its ε, side by side."""
    kind = str(question.WhichOneof("kind"))
    qtype = question_type(kind)
    return plan_question(
        kind, *qtype.domain_args(question), epsilon=request.epsilon, alpha=request.alpha,
        mechanism=request.mechanism, margin=request.margin, participants=request.participants,
        confidence=request.confidence, p=request.share,
    )  # fmt: skip


def plan_outcome(
    result: KindPlan,
    what: str,
    width: str,
    extra: dict[str, Any] | None = None,
    after: Callable[[Emit], None] | None = None,
) -> Outcome:
    """The ``--json`` document (``type`` first) and text of a compared plan."""
    data = result.to_dict()
    document = {"type": data.pop("question_type"), **data, **(extra or {})}

    def show(emit: Emit) -> None:
        kind_plan_lines(result, what, width, emit)
        if after is not None:
            after(emit)

    return Outcome(document, show, result)
