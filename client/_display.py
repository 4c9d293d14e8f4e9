"""What ``deniable answer`` shows the participant: questions, reports, cost and budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deniable.client._guard import Plan
from deniable.client._policy import Policy, round_down, round_up
from deniable.shared.mechanisms import Mechanism
from deniable.shared.questions import question_type
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Say", "answer_document", "show_question", "show_reports"]

Say = Callable[[str], None]


def show_question(
    say: Say, index: int, total: int, question: pb.Question, mechanism: Mechanism
) -> None:
    """Text, plain-language privacy and exact ε, computed here from the mechanism."""
    say(f"\n[{index}/{total}] {question.id}: {visible(question.text)}")
    for line in question_type(question.WhichOneof("kind") or "binary").prompt_lines(question):
        say(f"  {visible(line)}")  # option labels come from the server
    say(f"  Privacy: {mechanism.explain()}")
    alpha = mechanism.parameters().get("alpha")
    source = f"alpha = {alpha!r}" if alpha is not None else f"the {mechanism.name} parameters"
    say(f"  Exact epsilon: {mechanism.epsilon!r}, from {source} (computed on this device)")


def show_reports(say: Say, target: str, plan: Plan, policy: Policy) -> None:
    """Exactly what will be sent (randomized answers only), what it costs, what is left."""
    say(f"\nWill be sent to {target} (your true answers never leave this device):")
    say(f"  {'REPORT_ID':<32}  {'QUESTION':<12}  {'REPORTED':<24}  {'MECHANISM':<19}  EPSILON")
    for item in plan.prepared:
        cost = "0 (charged before)" if item.cost == 0 else round_up(item.mechanism.epsilon)
        say(
            f"  {item.report.report_id:<32}  {item.report.question_id:<12}  "
            f"{item.shown():<24}  {item.mechanism.name:<19}  {cost}"
        )
    reused = [item for item in plan.prepared if item.reused]
    if reused:
        were = "report was" if len(reused) == 1 else "reports were"
        first = min(str(item.drawn_at) for item in reused)
        say(f"  {len(reused)} {were} drawn before (from {first}) and kept: a question's report is")
        say("  drawn once and sent as it is, whatever the answer, so it cannot be re-rolled.")
    if plan.cost == 0:
        say("  Privacy cost now: none; every report was charged before.")
    else:
        paid = sum(item.cost == 0 for item in plan.prepared)
        note = f"; {paid} charged before cost nothing again" if paid else ""
        say(f"  Privacy cost now: epsilon <= {round_up(plan.cost)} (epsilons add up{note}).")
    say(
        f"  Your budget on this device: {round_up(plan.spent_before)} spent before, "
        f"{round_down(policy.budget - plan.spent_after)} left after this, "
        f"of {policy.budget!r}."
    )
    cap = policy.budget_per_aggregator
    if cap is not None:
        say(
            f"  Your cap at {plan.aggregator}: {round_up(plan.aggregator_before)} spent before, "
            f"{round_down(cap - plan.aggregator_after)} left after this, of {cap!r}."
        )


def answer_document(
    plan: Plan, policy: Policy, charged: bool, response: pb.SubmitReportsResponse | None
) -> dict[str, Any]:
    """The ``--json`` document of ``deniable answer``: reports, acknowledgement, privacy."""
    spent = plan.spent_after if charged else plan.spent_before
    here = plan.aggregator_after if charged else plan.aggregator_before
    cap = policy.budget_per_aggregator
    return {
        "survey_id": plan.survey_id,
        "sent": response is not None,
        "reports": [item.summary() for item in plan.prepared],
        "stored": response.stored if response else 0,
        "already_stored": response.already_stored if response else 0,
        "privacy": {
            "aggregator": plan.aggregator,
            "cost": plan.cost,
            "charged": charged,
            "spent": spent,
            "budget": policy.budget,
            "remaining": max(policy.budget - spent, 0.0),
            "max_epsilon": policy.max_epsilon,
            "scope": "device",
            "aggregator_cost": plan.aggregator_cost,
            "aggregator_spent": here,
            "budget_per_aggregator": cap,
            "aggregator_remaining": None if cap is None else max(cap - here, 0.0),
        },
    }
