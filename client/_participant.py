"""The participant's networked commands: ``deniable surveys`` and ``deniable answer``."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import click

from client._answer import (
    Answer,
    InvalidAnswerError,
    PreparedReport,
    answer_hint,
    build_reports,
    check_mechanism,
    check_open,
    from_remote,
    parse_answer,
    parse_answers,
)
from client._remote import AggregatorClient, RemoteError
from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = ["answer_command", "surveys_command"]

ATTEMPTS = 4  # UNAVAILABLE / DEADLINE_EXCEEDED are retried, with the same report_ids
CHOICES = click.Choice(["yes", "no", "y", "n"], case_sensitive=False)
SERVER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})")
Say = Callable[[str], None]


def _check_server(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Accept ``HOST:PORT`` (or ``[IPv6]:PORT``) with a port in 1..65535."""
    match = SERVER.fullmatch(value)
    if not match or not 0 < int(match.group(2)) < 65536:
        raise InvalidAnswerError(f"--server {value!r}: expected HOST:PORT, e.g. 127.0.0.1:50051")
    return value


server_option = click.option(
    "--server",
    envvar="DENIABLE_SERVER",
    show_envvar=True,
    required=True,
    metavar="HOST:PORT",
    callback=_check_server,
    help="Address of the aggregator.",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document on stdout; text to stderr."
)


@contextmanager
def _connect(target: str) -> Iterator[AggregatorClient]:
    """A client for ``target``; aggregator errors become one-line errors with exit codes."""
    try:
        with AggregatorClient(target, attempts=ATTEMPTS) as client:
            yield client
    except RemoteError as error:
        raise from_remote(error, target) from None


def stdin_is_tty() -> bool:
    """Whether a person can answer prompts: the default of ``--interactive``."""
    return sys.stdin.isatty()


@click.command("surveys")
@server_option
@json_option
def surveys_command(server: str, as_json: bool) -> None:
    """List the open surveys: id, questions, reports so far and title."""
    with _connect(server) as client:
        surveys = client.list_surveys()
    rows = [
        {"id": s.id, "title": s.title, "questions": len(s.questions), "reports": s.reports}
        for s in surveys
    ]
    if as_json:
        click.echo(json.dumps({"server": server, "surveys": rows}, indent=2))
    elif not rows:
        click.echo(f"No open surveys at {server}.")
    else:
        width = max(len("ID"), *(len(survey.id) for survey in surveys))
        click.echo(f"{'ID':<{width}}  QUESTIONS  REPORTS  TITLE")
        for row in rows:
            click.echo(
                f"{row['id']:<{width}}  {row['questions']:>9}  {row['reports']:>7}  {row['title']}"
            )


def _show_question(say: Say, index: int, total: int, question: pb.Question) -> None:
    """Text, plain-language privacy and exact ε, computed here from the mechanism."""
    mechanism = check_mechanism(question)
    say(f"\n[{index}/{total}] {question.id}: {question.text}")
    if question.WhichOneof("kind") == "categorical":
        for number, option in enumerate(question.categorical.options, 1):
            say(f"  {number:>4}. {option}")
    elif question.WhichOneof("kind") == "numeric":
        say(f"  Answer with a number from {question.numeric.min!r} to {question.numeric.max!r}.")
    say(f"  Privacy: {mechanism.explain()}")
    alpha = getattr(mechanism, "alpha", None)
    source = f"alpha = {alpha!r}" if alpha is not None else f"the {mechanism.kind} parameters"
    say(f"  Exact epsilon: {mechanism.epsilon!r}, from {source} (computed on this device)")


def _show_reports(say: Say, target: str, prepared: list[PreparedReport]) -> None:
    """Exactly what will be sent: randomized answers only, never a true answer."""
    say(f"\nWill be sent to {target} (your true answers never leave this device):")
    say(f"  {'REPORT_ID':<32}  {'QUESTION':<12}  {'REPORTED':<24}  MECHANISM")
    for item in prepared:
        say(
            f"  {item.report.report_id:<32}  {item.report.question_id:<12}  "
            f"{item.shown():<24}  {item.mechanism.kind}"
        )
    total = math.ceil(math.fsum(item.mechanism.epsilon for item in prepared) * 10_000) / 10_000
    say(f"  Privacy cost of this survey: epsilon <= {total:.4f} in total (epsilons add up).")


@click.command("answer")
@server_option
@click.argument("survey_id")
@click.option(
    "--answer",
    "answer_options",
    multiple=True,
    metavar="QID=VALUE",
    help="Answer question QID without a prompt (repeatable): yes/no/y/n, an option's name "
    "or number (from 1), or a number in the question's range.",
)
@click.option("--dry-run", is_flag=True, help="Show the randomized reports; send nothing.")
@click.option("--yes", "assume_yes", is_flag=True, help="Send without asking for confirmation.")
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Prompt for missing answers and for confirmation. Default: when stdin is a terminal.",
)
@json_option
def answer_command(
    server: str,
    survey_id: str,
    answer_options: tuple[str, ...],
    dry_run: bool,
    assume_yes: bool,
    interactive: bool | None,
    as_json: bool,
) -> None:
    """Answer a survey; your answers are randomized on this device first.

    For each question of survey SURVEY_ID you see its text, what its privacy
    setting means and its exact epsilon, computed here from the mechanism (the
    server's figures are not used). Each answer is randomized with the OS's
    cryptographic random source, you see exactly what will be sent (never your
    true answers), and all answers go in one batch.

    Answers come from --answer or, when interactive, from prompts; you then
    confirm before anything is sent (--yes skips that). Declining sends nothing
    and exits 0. Exit codes: see deniable --help.
    """
    if interactive is None:
        interactive = stdin_is_tty()
    say: Say = partial(click.echo, err=as_json)
    with _connect(server) as client:
        survey = client.get_survey(survey_id)
        check_open(survey)
        ids = [question.id for question in survey.questions]
        for question in survey.questions:
            check_mechanism(question)  # refuse before asking anything
        answers = parse_answers(answer_options, survey.questions)
        missing = [q for q in survey.questions if q.id not in answers]
        if missing and not interactive:
            first = missing[0]
            value = "yes|no" if first.WhichOneof("kind") == "binary" else "VALUE"
            hint = "" if value == "yes|no" else f" ({answer_hint(first)})"
            raise InvalidAnswerError(
                f"no answer for question {first.id!r}; pass --answer {first.id}={value}{hint}"
            )
        say(f"Survey {survey.id}: {survey.title}")
        for index, question in enumerate(survey.questions, 1):
            _show_question(say, index, len(ids), question)
            if question.id in answers:
                say("  Answered with --answer.")
            else:
                answers[question.id] = _prompt(question, as_json)
        prepared = build_reports(survey, answers)
        del answers  # the true answers are not needed past this point
        _show_reports(say, server, prepared)
        response = _send(client, say, prepared, dry_run, interactive and not assume_yes, as_json)
    if as_json:
        click.echo(json.dumps(_result(survey.id, prepared, response), indent=2))


def _prompt(question: pb.Question, as_json: bool) -> Answer:
    """Ask until the answer is valid for the question (yes/no, an option, a number in range)."""
    if question.WhichOneof("kind") == "binary":
        return parse_answer(click.prompt("  Your answer", type=CHOICES, err=as_json))
    while True:
        text = click.prompt(f"  Your answer ({answer_hint(question)})", err=as_json)
        try:
            return parse_answer(text, question)
        except ValueError as error:
            click.echo(f"  {error}", err=True)


def _send(
    client: AggregatorClient,
    say: Say,
    prepared: list[PreparedReport],
    dry_run: bool,
    confirm: bool,
    as_json: bool,
) -> pb.SubmitReportsResponse | None:
    """Submit all reports in one batch (retried with the same ids), unless not wanted."""
    count = len(prepared)
    if dry_run:
        say("Dry run: nothing was sent.")
        return None
    if confirm and not click.confirm(
        f"Send these {count} randomized answers to {client.target}?", default=False, err=as_json
    ):
        say("Nothing was sent.")
        return None
    response = client.submit_reports([item.report for item in prepared])
    before = f" ({response.already_stored} were already stored)" if response.already_stored else ""
    say(f"Sent {count} randomized answers; the server stored {response.stored}.{before}")
    return response


def _result(
    survey_id: str, prepared: list[PreparedReport], response: pb.SubmitReportsResponse | None
) -> dict[str, Any]:
    """The ``--json`` document: the randomized reports and the server's acknowledgement."""
    return {
        "survey_id": survey_id,
        "sent": response is not None,
        "reports": [item.summary() for item in prepared],
        "stored": response.stored if response else 0,
        "already_stored": response.already_stored if response else 0,
    }
