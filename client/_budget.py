"""``deniable budget``: the privacy spent and left, device-wide and per aggregator."""

from __future__ import annotations

import json
from typing import Any

import click

from deniable.client._guard import LocalState
from deniable.client._ledger import Ledger, aggregator_name
from deniable.client._options import (
    json_option,
    optional_server_option,
    policy_options,
)
from deniable.client._policy import Policy, round_down, round_up
from deniable.shared.text import visible

__all__ = ["budget_command", "budget_document"]


def budget_document(ledger: Ledger, policy: Policy, aggregators: list[str]) -> dict[str, Any]:
    """Spent and remaining ε on this device, and per aggregator with each survey's charges.

    A report sent to several aggregators (or under several names of one) counts once in
    the device's total and once at each of them. An aggregator's ``remaining`` is what it
    can still collect: the device's remaining budget, or less under its cap.
    """
    device_spent = ledger.total()
    device_left = max(policy.budget - device_spent, 0.0)
    cap = policy.budget_per_aggregator
    rows = []
    for aggregator in aggregators:
        spent = ledger.spent(aggregator)
        surveys = [
            {
                "survey_id": survey_id,
                "answers": len(ledger.of(aggregator, survey_id)),
                "spent": ledger.spent(aggregator, survey_id),
                "charges": [charge.to_json() for charge in ledger.of(aggregator, survey_id)],
            }
            for survey_id in ledger.surveys(aggregator)
        ]
        budget = policy.budget if cap is None else min(cap, policy.budget)
        left = device_left if cap is None else min(device_left, max(cap - spent, 0.0))
        rows.append(
            {
                "aggregator": aggregator,
                "spent": spent,
                "budget": budget,
                "remaining": left,
                "surveys": surveys,
            }
        )
    return {
        "policy": {
            "max_epsilon": policy.max_epsilon,
            "budget": policy.budget,
            "budget_per_aggregator": cap,
            "sources": {
                name: policy.source(name)
                for name in ("max_epsilon", "budget", "budget_per_aggregator")
            },
        },
        "device": {"spent": device_spent, "budget": policy.budget, "remaining": device_left},
        "aggregators": rows,
    }


@click.command("budget")
@optional_server_option
@policy_options
@json_option
def budget_command(server: str | None, policy: Policy, as_json: bool) -> None:
    """Show the privacy (epsilon) spent and left, on this device and per aggregator.

    Reads this device's ledger ($XDG_DATA_HOME/deniable/ledger.json); contacts
    no aggregator. The budget (--budget) is device-wide: every aggregator and
    survey together may collect at most that epsilon from this device, and a
    report sent to several aggregators (or under several names of one) counts
    once. --budget-per-aggregator also caps each aggregator. Answers resent as they
    were cost nothing. --server shows one aggregator only.
    """
    state = LocalState()
    ledger = state.read_ledger()
    aggregators = [aggregator_name(server)] if server else ledger.aggregators()
    document = budget_document(ledger, policy, aggregators)
    if as_json:
        click.echo(json.dumps({"ledger": str(state.ledger_path), **document}, indent=2))
        return
    cap = policy.budget_per_aggregator
    per = (
        ""
        if cap is None
        else f", at most {cap!r} per aggregator ({policy.source('budget_per_aggregator')})"
    )
    click.echo(
        f"Budget: epsilon {policy.budget!r} on this device, over every aggregator "
        f"({policy.source('budget')}){per}; at most {policy.max_epsilon!r} per answer "
        f"({policy.source('max_epsilon')})."
    )
    click.echo(f"Ledger: {state.ledger_path}")
    device = document["device"]
    click.echo(
        f"This device: {round_up(device['spent'])} spent, {round_down(device['remaining'])} left."
    )
    if not aggregators:
        click.echo("No privacy spent yet.")
        return
    # Survey ids came from aggregators (those of earlier releases were not checked).
    names = {row["aggregator"]: visible(row["aggregator"]) for row in document["aggregators"]}
    width = max(len("AGGREGATOR"), *(len(name) for name in names.values()))
    click.echo(f"\n{'AGGREGATOR':<{width}}  {'SURVEY':<16}  ANSWERS    SPENT     LEFT")
    for row in document["aggregators"]:
        answers = sum(survey["answers"] for survey in row["surveys"])
        click.echo(
            f"{names[row['aggregator']]:<{width}}  {'(all)':<16}  {answers:>7}  "
            f"{round_up(row['spent']):>7}  {round_down(row['remaining']):>7}"
        )
        for survey in row["surveys"]:
            click.echo(
                f"{'':<{width}}  {visible(survey['survey_id']):<16}  {survey['answers']:>7}  "
                f"{round_up(survey['spent']):>7}"
            )
