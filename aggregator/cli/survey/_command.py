"""``deniable-aggregator survey``: create, list, show and close surveys, issue tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from google.protobuf import json_format

from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    optional_token,
    read_token,
    remote_errors,
    server_option,
    tls_options,
    token_option,
)
from deniable.aggregator.cli.survey._spec import (
    MAX_REPORTS,
    count_from_spec,
    epsilon_warnings,
    questions_from_spec,
    release_step_from_spec,
    spec_text,
    survey_options_from_spec,
)
from deniable.aggregator.cli.survey._tokens import tokens_command
from deniable.client import AggregatorClient
from deniable.shared.privacy import MAX_RELEASE_STEP
from deniable.shared.questions import question_type
from deniable.shared.text import visible
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

STATES = {pb.SURVEY_STATE_OPEN: "open", pb.SURVEY_STATE_CLOSED: "closed"}


def survey_to_dict(survey: pb.Survey) -> dict[str, Any]:
    """The survey in the wire contract's JSON field names."""
    return json_format.MessageToDict(
        survey, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def print_survey(survey: pb.Survey) -> None:
    """A readable summary with each question's exact ε."""
    click.echo(
        f"{visible(survey.id)}  {visible(survey.title)}  ({STATES.get(survey.state, '?')}, "
        f"{survey.reports:,} reports{' as released' if survey.reports_as_released else ''})"
    )
    enrollment = (
        f"required, {survey.tokens_issued:,} tokens issued"
        if survey.enrollment_required
        else "not required"
    )
    gate = f"{survey.min_reports:,} reports per question" if survey.min_reports else "none"
    click.echo(f"  enrollment: {enrollment}; release gate: {gate}")
    click.echo(f"  {release_line(survey)}")
    for question in survey.questions:
        click.echo(f"  {visible(question.id)}: {visible(question.text)}")
        click.echo(f"    {visible(describe_question(question))}")


def release_line(survey: pb.Survey) -> str:
    """How estimates are released, and the central (ε, δ) that follows, in one line."""
    if not survey.release_step:
        return (
            "releases: not stepped, every estimate is from all reports; only the local ε "
            "applies (a central ε needs --release-step and enrollment)"
        )
    first = survey.min_reports or survey.release_step
    steps = (
        f"releases: in steps of {survey.release_step:,} reports per question (first at {first:,})"
    )
    if not survey.HasField("central"):  # stepped without enrollment, made by an older release
        return (
            f"{steps}; no central ε: without enrollment anyone could fill a step with "
            "forged reports, so only the local ε applies"
        )
    central = survey.central
    return (
        f"{steps}; central ε {central.epsilon:.4f} at δ {central.delta:.1e} over "
        f"{central.questions} question(s) for readers of released estimates, assuming the "
        f"other reports of a step come from distinct enrolled participants; against the "
        f"operator, who sees every report, local ε {central.local_epsilon:.4f}"
    )


def describe_question(question: pb.Question) -> str:
    """One line: the kind of question, its mechanism and its exact ε."""
    kind = question.WhichOneof("kind")
    return question_type(kind).describe(question) if kind else "a question of an unknown kind"


@click.group("survey")
def survey_group() -> None:
    """Create, list, show and close surveys on a running aggregator."""


@survey_group.command("create")
@server_option
@tls_options
@token_option
@click.argument("spec_file", type=click.File("rb"))
@click.option(
    "--release-step",
    type=click.IntRange(0, MAX_RELEASE_STEP),
    default=None,
    metavar="M",
    help="Release estimates in steps of at least M new reports per question, which gives "
    "them a central (ε, δ) by amplification by shuffling; needs enrollment_required in the "
    "spec (default: the spec's release_step, else 0: not stepped).",
)
@click.option(
    "--max-reports",
    type=click.IntRange(0, MAX_REPORTS),
    default=None,
    metavar="N",
    help="Store at most N reports, all questions together; a batch that would pass it is "
    "refused whole (default: the spec's max_reports, else 0: no limit).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the created survey as JSON.")
def create(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    spec_file: Any,
    release_step: int | None,
    max_reports: int | None,
    as_json: bool,
) -> None:
    """Create a survey from SPEC_FILE (UTF-8 JSON; '-' reads stdin) and print its id.

    \b
    {"title": "Exam honesty",
     "questions": [{"id": "cheated", "text": "Have you ever cheated in an exam?",
                    "type": "binary", "epsilon": 1.0}]}

    Optional survey keys: "min_reports": N withholds a question's estimate
    until it has N reports (a display threshold: without enrollment anyone can
    send reports to pass it, so it protects no one); "enrollment_required":
    true accepts reports only with an enrollment token (see survey tokens), one
    per token and question; "release_step": M (or --release-step M) refreshes
    each question's estimate only once M more reports arrived (the first
    release at min_reports, or at M without it), and reports the central
    (ε, δ) this gives against readers of the released estimates (not against
    the operator: see docs/privacy.md). A release step needs
    "enrollment_required": true, since the central ε assumes each step's other
    reports come from distinct admitted participants. "max_reports": N (or
    --max-reports N) stores at most N reports, all questions together: a
    batch that would pass it is refused whole.

    \b
    Question types and their keys:
      binary       alpha or epsilon; mechanism auto (default) or
                   randomized_response
      categorical  options (2..1024 names), epsilon, or alpha for GRR;
                   mechanism auto (default), grr, oue or olh
      numeric      min, max, epsilon; mechanism auto (default), laplace,
                   duchi, piecewise or hybrid
      joint        parts (2..8, unique ids, each with id, text and type
                   binary, categorical with options, or numeric with min,
                   max and bins, or edges), epsilon; mechanism auto
                   (default), grr or oue on the product of the parts'
                   sizes (at most 1024 cells), answered in ONE report
    auto picks the mechanism whose estimate has the least worst-case
    variance at the question's epsilon and domain (as plan shows).
    For example {"id": "os", "text": "Which OS?", "type": "categorical",
    "options": ["iOS", "Android", "Other"], "epsilon": 1.0} or {"id": "hours",
    "text": "Hours studied?", "type": "numeric", "min": 0, "max": 40,
    "epsilon": 1.0}. The mechanism's parameters are fixed here; the daemon and
    every participant recompute ε from them. Every mechanism's exact ε must be
    from 0.001 to 20 (an epsilon outside is refused, never rounded to fit), and
    a numeric min and max within ±1e15. A question above 2.0, the participants'
    default --max-epsilon, is created with a warning: participants who keep the
    default refuse the survey. Texts (the title,
    question texts, option labels) may not hold control characters, line
    breaks or bidirectional controls: participants see them in a terminal.
    """
    name = "stdin" if spec_file.name == "<stdin>" else spec_file.name
    try:
        spec = json.loads(spec_text(spec_file.read(), name))
    except json.JSONDecodeError as error:
        fail(f"{name}: not valid JSON ({error})", 2)
    title, questions = questions_from_spec(spec)
    min_reports, enrollment_required = survey_options_from_spec(spec)
    step = release_step_from_spec(spec, release_step)
    cap = count_from_spec(spec, "max_reports", max_reports, MAX_REPORTS, "no limit")
    token = read_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey = client.create_survey(
            title,
            questions,
            min_reports=min_reports,
            enrollment_required=enrollment_required,
            release_step=step,
            max_reports=cap,
        )
    warnings = epsilon_warnings(questions)
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)
    if as_json:
        emit_json({**survey_to_dict(survey), "warnings": warnings})
    else:
        click.echo(survey.id)
        click.echo(f"created survey {survey.id!r}: {visible(survey.title)}", err=True)


@survey_group.command("list")
@server_option
@tls_options
@token_option
@click.option(
    "--all", "include_closed", is_flag=True, help="Include closed surveys (needs the admin token)."
)
@click.option("--json", "as_json", is_flag=True)
def list_surveys(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    include_closed: bool,
    as_json: bool,
) -> None:
    """List the surveys (open ones unless --all).

    With the admin token (needed for --all) a stepped survey's count is its live
    report count; without it, the reports its last releases are from (marked
    "as released").
    """
    token = read_token(admin_token_file) if include_closed else optional_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        surveys = client.list_surveys(include_closed)
    if as_json:
        emit_json({"surveys": [survey_to_dict(s) for s in surveys]})
        return
    if not surveys:
        click.echo("no surveys", err=True)
    for survey in surveys:
        click.echo(
            f"{visible(survey.id)}  {STATES.get(survey.state, '?'):6}  "
            f"{survey.reports:>9,} reports{' as released' if survey.reports_as_released else ''}"
            f"  {len(survey.questions)} question(s)  "
            f"{visible(survey.title)}"
            + (f"  [steps of {survey.release_step:,}]" if survey.release_step else "")
        )


@survey_group.command("show")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option("--json", "as_json", is_flag=True)
def show(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    survey_id: str,
    as_json: bool,
) -> None:
    """Show one survey with its questions and their exact ε.

    A stepped survey's live report count needs the admin token (else: as released).
    """
    token = optional_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey = client.get_survey(survey_id)
    if as_json:
        emit_json(survey_to_dict(survey))
    else:
        print_survey(survey)


@survey_group.command("close")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option("--json", "as_json", is_flag=True)
def close(
    server: str, tls: TlsConfig | None, admin_token_file: Path | None, survey_id: str, as_json: bool
) -> None:
    """Close a survey: no more reports are accepted."""
    token = read_token(admin_token_file)
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey = client.close_survey(survey_id)
    if as_json:
        emit_json(survey_to_dict(survey))
    else:
        click.echo(f"closed survey {survey.id!r} with {survey.reports:,} reports")


survey_group.add_command(tokens_command)
