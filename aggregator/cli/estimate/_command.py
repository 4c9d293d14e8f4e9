"""``deniable-aggregator estimate``: debiased estimates from a running aggregator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    optional_token,
    remote_errors,
    server_option,
    tls_options,
    token_option,
)
from deniable.aggregator.cli._interval_options import interval_kind_options, interval_options
from deniable.aggregator.cli.estimate._watch import (
    DEFAULT_INTERVAL,
    check_interval,
    watch_estimates,
)
from deniable.aggregator.questions import analysis_for
from deniable.client import AggregatorClient
from deniable.shared.text import visible
from deniable.shared.transport import RemoteError, TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

FIELDS = (
    "n", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "confidence",
    "method", "coverage", "simultaneous", "anytime", "estimand", "epsilon", "epsilon_approx",
    "alpha", "mechanism", "stored", "next_release_at", "stored_as_released",
)  # fmt: skip
CENTRAL_FIELDS = (
    "epsilon", "delta", "step", "local_epsilon", "method", "holds_against", "questions",
    "assumes",
)  # fmt: skip
OPTION_FIELDS = ("option", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "support")


def estimate_to_dict(estimate: pb.Estimate, question: pb.Question) -> dict[str, Any]:
    """The wire contract's field names and values, with the question type's own fields.

    A question estimated per option (multiple choice, a joint question's cells) has its
    figures per option; its type adds what else it estimates (see
    :meth:`~deniable.aggregator.questions.QuestionAnalysis.estimate_fields`).
    """
    data: dict[str, Any] = {"question_id": estimate.question_id}
    data.update({field: getattr(estimate, field) for field in FIELDS})
    if estimate.options:
        data["options"] = [
            {field: getattr(option, field) for field in OPTION_FIELDS}
            for option in estimate.options
        ]
        for field in ("estimate", "estimate_raw", "ci_low", "ci_high", "std_error"):
            del data[field]  # per option instead
    analysis_for(question).estimate_fields(estimate, data)
    if estimate.std_error_worst:
        data["std_error_worst"] = estimate.std_error_worst
    if estimate.HasField("central"):
        data["central"] = central_to_dict(estimate.central)
    return data


def central_to_dict(central: pb.CentralPrivacy) -> dict[str, Any]:
    """A ``CentralPrivacy`` message's fields by name."""
    return {field: getattr(central, field) for field in CENTRAL_FIELDS}


@click.command("estimate")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option("--question", "question_id", help="Only this question (default: all).")
@interval_options
@interval_kind_options
@click.option(
    "--delta",
    type=float,
    default=None,
    help="δ of the central (ε, δ) shown for a survey released in steps, 0 < δ < 1 "
    "(default: min(1e-6, 1/(100·stored reports)), down to a power of 10).",
)
@click.option(
    "--given",
    metavar="ITEM",
    default="",
    help="Multi-select, with --question and --item: among those who chose ITEM, the share "
    "who chose --item's (a ratio of estimates; delta-method interval).",
)
@click.option("--item", metavar="ITEM", default="", help="The item of --given's share.")
@click.option(
    "--watch",
    type=float,
    is_flag=False,
    flag_value=DEFAULT_INTERVAL,
    default=None,
    metavar="[SECONDS]",
    help=f"Refresh every SECONDS (default {DEFAULT_INTERVAL:g}) until Ctrl-C, with anytime-"
    "valid intervals: in place on a terminal, one after another otherwise, JSON Lines with "
    "--json. Put it after SURVEY_ID.",
)
@click.option(
    "--count",
    type=click.IntRange(min=1),
    default=None,
    help="With --watch: stop after this many refreshes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def estimate_command(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    survey_id: str,
    question_id: str | None,
    confidence: float,
    method: str,
    simultaneous: bool,
    anytime: bool,
    delta: float | None,
    given: str,
    item: str,
    watch: float | None,
    count: int | None,
    as_json: bool,
) -> None:
    """Estimate each question of SURVEY_ID with a confidence interval.

    Yes/no: the share answering yes. Multiple choice: each option's share, raw
    (unbiased) and projected onto the simplex, with an interval that contains the
    projected one: per option, or with --simultaneous covering all options at once.
    Numeric: the mean, with its interval and the mechanism's worst-case standard error.
    Multi-select: each item's share and the co-occurrence table (the share choosing
    both of two items; intervals in --json), and with --given X --item Y, among
    those who chose X the share who chose Y.
    Each question's note says what its interval promises.

    A survey released in steps (survey create --release-step) shows each
    question's last release, when the next is due, and the central (ε, δ) against
    readers of released estimates; the operator, who sees every report, is held
    only to the local ε. Its live report count ("released from N of M stored") is
    shown only with the admin token (--admin-token-file).

    --watch [SECONDS] refreshes the estimates every SECONDS (default 5) until Ctrl-C,
    which exits with status 0: redrawn in place on a terminal, one after another when
    the output is a pipe or a file, one JSON document per line with --json. Looking again
    and again at a live survey is what anytime-valid intervals allow, so --watch uses
    them (as --anytime does).
    """
    if delta is not None and not 0.0 < delta < 1.0:
        raise click.UsageError(f"--delta must be in (0, 1), got {delta}")
    if bool(given) != bool(item):
        raise click.UsageError("--given and --item go together: give both or neither")
    if given and question_id is None:
        raise click.UsageError("--given and --item need --question (a multi-select question)")
    if count is not None and watch is None:
        raise click.UsageError("--count needs --watch")
    if watch is not None:
        check_interval(watch)
    token = optional_token(admin_token_file)

    def fetch(client: AggregatorClient) -> tuple[pb.Survey, list[dict[str, Any]]]:
        results: list[dict[str, Any]] = []
        survey = client.get_survey(survey_id)
        questions = {q.id: q for q in survey.questions}
        ids = list(questions)
        if question_id is not None and question_id not in ids:
            fail(f"survey {survey_id!r} has no question {question_id!r} (has: {ids})", 4)
        for qid in [question_id] if question_id else ids:
            try:
                estimate = client.get_estimate(
                    survey_id,
                    qid,
                    confidence,
                    method,
                    simultaneous=simultaneous,
                    anytime=anytime or watch is not None,
                    central_delta=delta or 0.0,
                    given=given,
                    item=item,
                )
            except RemoteError as error:
                # Gated, stepped or asked for a δ: then the refusal is the release gate's or
                # the δ's, not "no reports yet".
                gated = survey.min_reports > 0 or survey.release_step > 0 or delta is not None
                if question_id is None and error.code == "FAILED_PRECONDITION" and not gated:
                    results.append({"question_id": qid, "n": 0})  # no reports yet
                    continue
                raise
            results.append(estimate_to_dict(estimate, questions[qid]))
        return survey, results

    if watch is not None:
        watch_estimates(
            server, tls, fetch, lambda survey, results: _show(survey, results, confidence),
            survey_id=survey_id, interval=watch, count=count, as_json=as_json, admin_token=token,
        )  # fmt: skip
        return
    with remote_errors(server), AggregatorClient(server, admin_token=token, tls=tls) as client:
        survey, results = fetch(client)
    if as_json:
        emit_json({"survey_id": survey.id, "title": survey.title, "estimates": results})
        return
    _show(survey, results, confidence)


def _show(survey: pb.Survey, results: list[dict[str, Any]], confidence: float) -> None:
    """The estimates as a table, then each question's notes."""
    click.echo(f"{visible(survey.title)} ({visible(survey.id)}): {survey.reports:,} reports")
    # The CI is for the estimate; the unbiased raw figure can lie outside it.
    header = (
        f"{'question':<16}{'n':>9}  {'estimate':>8}  {'unbiased':>8}  {'CI of estimate':<19}"
        f"{'std err':>8}  ε"
    )
    click.echo(header)
    questions = {question.id: question for question in survey.questions}
    for row in results:
        if row["n"] == 0:
            click.echo(f"{visible(row['question_id']):<16}{0:>9}  (no reports yet)")
            continue
        analysis_for(questions[row["question_id"]]).estimate_lines(row, click.echo)
    for row in results:
        _notes(row, questions[row["question_id"]])
    click.echo(
        f"{confidence:.0%} intervals; estimand: population share or mean; "
        "ε is exact (the 2α approximation understates it)"
    )


def _notes(row: dict[str, Any], question: pb.Question) -> None:
    """What a question's interval promises, and its release and central ε, if any."""
    if row["n"] == 0:
        return
    qid = visible(row["question_id"])
    interval = visible(row["method"]) + (f"; {visible(row['coverage'])}" if row["coverage"] else "")
    click.echo(f"{qid}: interval {interval}")
    analysis_for(question).note_lines(row, click.echo)
    if row["stored"] > row["n"]:
        due = f", next release at {row['next_release_at']:,}" if row["next_release_at"] else ""
        click.echo(f"{qid}: released from {row['n']:,} of {row['stored']:,} stored reports{due}")
    if "central" in row:
        central = row["central"]
        click.echo(
            f"{qid}: central ε {central['epsilon']:.4f} at δ {central['delta']:.1e} for readers "
            f"of released estimates (steps of {central['step']:,} reports); against the "
            f"operator, local ε {central['local_epsilon']:.4f}"
        )
        if central.get("assumes"):
            click.echo(f"{qid}: the central ε assumes {visible(central['assumes'])}")
