"""What ``deniable answer`` asks the participant: each true answer, then whether to send."""

from __future__ import annotations

import click

from deniable.client._answer import Answer, answer_hint, parse_answer
from deniable.client._display import Say
from deniable.client._guard import Plan
from deniable.shared.questions import question_type
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["decide", "prompt_answer"]


def prompt_answer(question: pb.Question, as_json: bool) -> Answer:
    """Ask until the answer is valid for the question (yes/no, an option, a number in range).

    A joint question is asked part by part; the parts' answers become one answer (its cell).
    """
    qtype = question_type(question.WhichOneof("kind") or "binary")
    parts = qtype.parts(question)
    if parts:
        answers = []
        for part in parts:
            click.echo(f"  Part {part.id}: {visible(part.text)}", err=as_json)
            answers.append(prompt_answer(part, as_json))
        return qtype.combine(question, answers)
    choices = qtype.choices(question)
    if choices:
        choice = click.Choice(choices, case_sensitive=False)
        return parse_answer(click.prompt("  Your answer", type=choice, err=as_json), question)
    while True:
        text = click.prompt(f"  Your answer ({answer_hint(question)})", err=as_json)
        try:
            return parse_answer(text, question)
        except ValueError as error:
            click.echo(f"  {error}", err=True)


def decide(say: Say, target: str, plan: Plan, dry_run: bool, confirm: bool, as_json: bool) -> bool:
    """Whether to charge and send: not in a dry run, nor when the participant declines."""
    if dry_run:
        say(
            "Dry run: nothing was sent or charged. The reports shown are kept: answering this "
            "survey later sends these same reports."
        )
        return False
    count = len(plan.prepared)
    if confirm and not click.confirm(
        f"Send these {count} randomized answers to {target}?", default=False, err=as_json
    ):
        say("Nothing was sent.")
        return False
    return True
