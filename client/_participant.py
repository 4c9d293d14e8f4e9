"""The participant's networked commands: ``deniable surveys`` and ``deniable answer``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import click

from deniable.client._answer import (
    Answer,
    answer_hint,
    check_open,
)
from deniable.client._answer_sources import GivenAnswers, answers_file_option
from deniable.client._content import repeats
from deniable.client._display import Say, answer_document, show_question, show_reports
from deniable.client._errors import InvalidAnswerError, RefusedError, from_remote
from deniable.client._guard import LocalState, Plan
from deniable.client._ledger import aggregator_name
from deniable.client._memo import Kept
from deniable.client._options import (
    json_option,
    policy_options,
    server_option,
    tls_options,
    token_options,
)
from deniable.client._policy import Policy
from deniable.client._prompts import decide, prompt_answer
from deniable.client._remote import AggregatorClient, RemoteError
from deniable.client._token import check_enrollment, refused_with_token
from deniable.shared.errors import shown
from deniable.shared.questions import question_type
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["answer_command", "surveys_command"]

ATTEMPTS = 4  # UNAVAILABLE / DEADLINE_EXCEEDED are retried, with the same report_ids


@contextmanager
def _connect(target: str, tls: TlsConfig | None = None) -> Iterator[AggregatorClient]:
    """A client for ``target``; aggregator errors become one-line errors with exit codes."""
    try:
        with AggregatorClient(target, attempts=ATTEMPTS, tls=tls) as client:
            yield client
    except RemoteError as error:
        raise from_remote(error, target) from None


@click.command("surveys")
@server_option
@tls_options
@json_option
def surveys_command(server: str, tls: TlsConfig | None, as_json: bool) -> None:
    """List the open surveys: id, questions, reports so far and title."""
    with _connect(server, tls) as client:
        surveys = client.list_surveys()
    rows = [
        {"id": s.id, "title": s.title, "questions": len(s.questions), "reports": s.reports}
        for s in surveys
    ]
    if as_json:  # JSON escapes every control character itself
        click.echo(json.dumps({"server": server, "surveys": rows}, indent=2))
    elif not rows:
        click.echo(f"No open surveys at {visible(server)}.")
    else:
        width = max(len("ID"), *(len(visible(survey.id)) for survey in surveys))
        click.echo(f"{'ID':<{width}}  QUESTIONS  REPORTS  TITLE")
        for survey in surveys:
            click.echo(
                f"{visible(survey.id):<{width}}  {len(survey.questions):>9}  "
                f"{survey.reports:>7}  {visible(survey.title)}"
            )


@click.command("answer")
@server_option
@tls_options
@click.argument("survey_id")
@click.option(
    "--answer",
    "answer_options",
    multiple=True,
    metavar="QID=VALUE",
    help="Answer question QID without a prompt (repeatable): yes/no/y/n, an option's name "
    "or number (from 1), a number in the question's range, for a multi-select question "
    "any items by name or number separated by commas (QID=apples,pears; QID=none or QID= "
    "for none); a joint question takes its parts' answers in order, comma-separated (e.g. "
    "QID=yes,HR,12). Scripts only: a true answer on the command line is in your shell "
    "history and the process list (a warning says so at a terminal); see --answers-file.",
)
@answers_file_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the randomized reports; send and charge nothing (the reports are kept).",
)
@click.option("--yes", "assume_yes", is_flag=True, help="Send without asking for confirmation.")
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Prompt for missing answers and for confirmation. Default: when stdin is a terminal.",
)
@policy_options
@token_options
@json_option
def answer_command(
    server: str,
    tls: TlsConfig | None,
    survey_id: str,
    answer_options: tuple[str, ...],
    answers_file: Path | None,
    dry_run: bool,
    assume_yes: bool,
    interactive: bool | None,
    policy: Policy,
    enrollment_token: str | None,
    as_json: bool,
) -> None:
    """Answer a survey; your answers are randomized on this device first.

    For each question of survey SURVEY_ID you see its text, what its privacy
    setting means and its exact epsilon, computed here from the mechanism (the
    server's figures are not used). A question whose epsilon is above
    --max-epsilon is refused, and so is an answer that would take the epsilon
    spent on this device, over every aggregator, over --budget (or the epsilon
    spent at this aggregator over --budget-per-aggregator; see deniable budget).
    Each answer is randomized with the OS's cryptographic random source, you see
    exactly what will be sent (never your true answers), and all answers go in
    one batch.

    Each question's report is drawn once and kept (in your memo, before you
    see it): later runs, dry runs included, show and send that same report
    whatever you answer then, at no new privacy cost, so that fresh reports
    can never be averaged to reveal your answer. The same question (same text,
    options and mechanism) asked in another survey or at another aggregator gets
    that report's value too, at no new cost. Once the aggregator has stored a
    survey's reports, answering it again is refused (exit code 5).
    The cost is recorded in your ledger before anything is sent.

    A survey that requires enrollment needs the token its organizer gave you
    (--token, --token-file or DENIABLE_TOKEN): each token stores one report per
    question. The token is sent with the reports and never written to your
    ledger or memo.

    A joint question groups a few parts (yes/no, an option, a number falling in
    one of stated bins) answered together as ONE randomized report at one
    epsilon: answer it with its parts' answers in order, separated by commas
    (--answer habits=yes,no; an option whose name holds a comma by its number),
    or part by part at the prompts.

    Answers come from the prompts when interactive (the way to answer: the
    true answers are then in no command line), from --answers-file FILE or -
    (standard input), or from --answer (scripts: the command line is in your
    shell history and the process list); you then confirm before anything is
    sent (--yes skips that). Declining sends nothing and exits 0. Exit codes:
    see deniable --help.
    """
    given = GivenAnswers.collect(answer_options, answers_file, interactive)  # before connecting
    interactive = given.interactive
    say: Say = partial(click.echo, err=as_json)
    state = LocalState()
    with _connect(server, tls) as client:
        survey = client.get_survey(survey_id)
        check_requested(survey, survey_id)
        check_open(survey)
        check_enrollment(survey, enrollment_token)  # before anything is asked or charged
        specs = {q.id: policy.check(q) for q in survey.questions}  # refuse before asking
        with state.session(write=False) as peek:  # no lock while the participant types
            kept, twins = peek.kept(server, survey), peek.twins(server, survey)
        first_asked = repeats(survey.questions)
        _refuse_answered(survey, kept, server)
        answers, sources = given.parse(survey.questions)
        _require_answers(survey, answers, interactive, {*kept, *twins, *first_asked})
        say(f"Survey {survey.id}: {visible(survey.title)}")
        for index, question in enumerate(survey.questions, 1):
            show_question(say, index, len(survey.questions), question, specs[question.id])
            if question.id in kept:
                say(
                    f"  Answered before: the report drawn on {kept[question.id].drawn_at} is "
                    "kept and sent as it is; an answer given now is not used."
                )
            elif question.id in twins:
                twin = twins[question.id]
                say(
                    f"  Asked before (survey {visible(twin.report.survey_id)} at "
                    f"{visible(twin.aggregator)}): the report drawn for it on {twin.drawn_at} "
                    "is sent again, so no second draw can be averaged with it; an answer given "
                    "now is not used."
                )
            elif question.id in first_asked:
                say(
                    f"  The same question as {visible(first_asked[question.id])}: its report "
                    "is sent for both; no answer is asked."
                )
            elif question.id in answers:
                say(f"  Answered {sources[question.id]}.")
            else:
                answers[question.id] = prompt_answer(question, as_json)
        on_wait = partial(click.echo, err=True)
        with state.session(write=True, on_wait=on_wait) as session:
            plan = session.plan(server, survey, specs, answers)
            del answers  # the true answers are not needed past this point
            if plan.sent:  # another run stored them since we looked
                _refuse_answered(survey, session.kept(server, survey), server)
            session.keep(plan, survey)  # kept before it is shown: never drawn again
            plan.check_budget(policy)  # refuse before anything is sent
            show_reports(say, server, plan, policy)
            confirm = interactive and not assume_yes
            go = decide(say, client.target, plan, dry_run, confirm, as_json)
            if go:
                session.commit(plan)  # charged before sending: never under-counted
        response = _send(client, say, plan, enrollment_token) if go else None
    if response is not None:
        with state.session(write=True, on_wait=on_wait) as session:
            session.mark_sent(plan)
    if as_json:
        click.echo(json.dumps(answer_document(plan, policy, go, response), indent=2))


def _refuse_answered(survey: pb.Survey, kept: Mapping[str, Kept], server: str) -> None:
    """Refuse a survey whose every report the aggregator has acknowledged before."""
    if len(kept) < len(survey.questions) or any(k.sent_at is None for k in kept.values()):
        return
    last = max(str(k.sent_at) for k in kept.values())
    reports = "its report was" if len(kept) == 1 else f"its {len(kept)} reports were"
    raise RefusedError(
        f"you already answered survey {survey.id} at {aggregator_name(server)}: {reports} "
        f"stored on {last}. Each question gets one report, drawn once, so that reports "
        "cannot be averaged to reveal your answers; nothing was sent"
    )


def check_requested(survey: pb.Survey, survey_id: str) -> None:
    """Refuse a survey other than the one asked for: its answers would be charged to it.

    Raises:
        RefusedError: the aggregator answered with another survey id.
    """
    if survey.id != survey_id:
        raise RefusedError(
            f"asked for survey {visible(survey_id)}, the aggregator sent survey "
            f"{shown(survey.id)}; refusing to answer, nothing was sent"
        )


def _require_answers(
    survey: pb.Survey, answers: dict[str, Answer], interactive: bool, covered: set[str]
) -> None:
    """Without prompts, every question needs a kept report or an --answer; name one missing.

    ``covered``: questions whose report is kept, here or for the same question elsewhere.
    """
    missing = [q for q in survey.questions if q.id not in answers and q.id not in covered]
    if missing and not interactive:
        first = missing[0]
        kind = question_type(first.WhichOneof("kind") or "binary")
        value = kind.placeholder(first)
        hint = "" if kind.choices(first) else f" ({answer_hint(first)})"
        raise InvalidAnswerError(
            f"no answer for question {first.id!r}; pass --answer {first.id}={value}{hint}"
        )


def _send(
    client: AggregatorClient, say: Say, plan: Plan, enrollment_token: str | None
) -> pb.SubmitReportsResponse:
    """Submit all reports in one batch (retried with the same ids); they are already charged."""
    try:
        reports = [item.report for item in plan.prepared]
        response = client.submit_reports(reports, enrollment_token=enrollment_token)
    except RemoteError as error:
        refused = refused_with_token(error, plan.survey_id) if enrollment_token else None
        if refused is not None:
            raise refused from None
        failure = from_remote(error, client.target)
        raise type(failure)(
            f"{failure.message}. Your answers stay recorded in your ledger: running the same "
            "command again resends the same reports at no extra privacy cost"
        ) from None
    count = len(plan.prepared)
    before = f" ({response.already_stored} were already stored)" if response.already_stored else ""
    say(f"Sent {count} randomized answers; the server stored {response.stored}.{before}")
    return response
