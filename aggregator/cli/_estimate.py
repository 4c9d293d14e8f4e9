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
from deniable.aggregator.cli._watch import DEFAULT_INTERVAL, check_interval, watch_estimates
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
ASSOCIATION_FIELDS = pb.AssociationEstimate.DESCRIPTOR.fields


def estimate_to_dict(estimate: pb.Estimate) -> dict[str, Any]:
    """The wire contract's field names and values (per option for multiple choice)."""
    data: dict[str, Any] = {"question_id": estimate.question_id}
    data.update({field: getattr(estimate, field) for field in FIELDS})
    if estimate.options:
        data["options"] = [
            {field: getattr(option, field) for field in OPTION_FIELDS}
            for option in estimate.options
        ]
        for field in ("estimate", "estimate_raw", "ci_low", "ci_high", "std_error"):
            del data[field]  # per option instead
    if estimate.marginals:
        data["marginals"] = [
            {
                "part": marginal.part,
                "values": [
                    {field: getattr(v, field) for field in OPTION_FIELDS} for v in marginal.values
                ],
            }
            for marginal in estimate.marginals
        ]
        data["associations"] = [
            {field.name: getattr(association, field.name) for field in ASSOCIATION_FIELDS}
            for association in estimate.associations
        ]
        data["joint_coverage"] = estimate.joint_coverage
    if estimate.items:
        _multi_select_fields(estimate, data)
    if estimate.std_error_worst:
        data["std_error_worst"] = estimate.std_error_worst
    if estimate.HasField("central"):
        data["central"] = central_to_dict(estimate.central)
    return data


PAIR_FIELDS = (
    "first", "second", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "support",
)  # fmt: skip
CONDITIONAL_FIELDS = (
    "given", "item", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "defined",
)  # fmt: skip


def _multi_select_fields(estimate: pb.Estimate, data: dict[str, Any]) -> None:
    """Item shares, pairs, the k×k co-occurrence matrices and any conditional share."""
    names = [item.option for item in estimate.items]
    data["items"] = [
        {"item" if field == "option" else field: getattr(item, field) for field in OPTION_FIELDS}
        for item in estimate.items
    ]
    data["pairs"] = [{field: getattr(p, field) for field in PAIR_FIELDS} for p in estimate.pairs]
    matrices: dict[str, Any] = {"items": names}
    for field in ("estimate", "ci_low", "ci_high", "std_error"):
        matrix = [[0.0] * len(names) for _ in names]
        for index, item in enumerate(estimate.items):
            matrix[index][index] = getattr(item, field)
        for pair in estimate.pairs:
            i, j = names.index(pair.first), names.index(pair.second)
            matrix[i][j] = matrix[j][i] = getattr(pair, field)
        matrices[field] = matrix
    data["cooccurrence"] = matrices
    if estimate.HasField("conditional"):
        data["conditional"] = {
            field: getattr(estimate.conditional, field) for field in CONDITIONAL_FIELDS
        }
    for field in ("estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "alpha"):
        del data[field]  # per item instead


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
        ids = [q.id for q in survey.questions]
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
            results.append(estimate_to_dict(estimate))
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
    for row in results:
        if row["n"] == 0:
            click.echo(f"{visible(row['question_id']):<16}{0:>9}  (no reports yet)")
            continue
        if "options" in row:
            click.echo(
                f"{visible(row['question_id']):<16}{row['n']:>9,}  ({visible(row['mechanism'])}, "
                f"ε {row['epsilon']:.4f}; estimate = projected onto the simplex, inside its CI; "
                "unbiased = raw, may lie outside it)"
            )
            for option in row["options"]:
                click.echo(_line(f"  {visible(option['option'])}", option, row["epsilon"], ""))
            if "marginals" in row:
                _joint(row)
            continue
        if "items" in row:
            _multi_select_lines(row)
            continue
        click.echo(_line(visible(row["question_id"]), row, row["epsilon"], f"{row['n']:>9,}"))
        if "std_error_worst" in row:
            click.echo(
                f"{'':<16}{'':>9}  mean of a number ({visible(row['mechanism'])}); worst-case "
                f"std err {row['std_error_worst']:.4f}"
            )
    for row in results:
        _notes(row)
    click.echo(
        f"{confidence:.0%} intervals; estimand: population share or mean; "
        "ε is exact (the 2α approximation understates it)"
    )


def _joint(row: dict[str, Any]) -> None:
    """A joint question's cross-tab as a table, its marginals and associations."""
    marginals = row["marginals"]
    first = [visible(v["option"]) for v in marginals[0]["values"]]
    cells = [option["estimate"] for option in row["options"]]
    columns = len(cells) // len(first)
    names = [visible(option["option"]).split(", ", 1)[1] for option in row["options"][:columns]]
    width = max(8, *(len(name) for name in names))
    side = max(len(visible(marginals[0]["part"])), *(len(v) for v in first), len("total"))
    click.echo(f"  cross-tab of {visible(marginals[0]['part'])} (rows) by the other parts:")
    click.echo(f"    {'':<{side}}" + "".join(f"  {name:>{width}}" for name in names) + "     total")
    for r, label in enumerate(first):
        shares = cells[r * columns : (r + 1) * columns]
        total = marginals[0]["values"][r]["estimate"]
        click.echo(
            f"    {label:<{side}}"
            + "".join(f"  {v:>{width}.4f}" for v in shares)
            + f"  {total:>8.4f}"
        )
    sums = [sum(cells[c::columns]) for c in range(columns)]
    click.echo(f"    {'total':<{side}}" + "".join(f"  {v:>{width}.4f}" for v in sums))
    for marginal in marginals:
        click.echo(f"  marginal of {visible(marginal['part'])}:")
        for value in marginal["values"]:
            click.echo(_line(f"    {visible(value['option'])}", value, row["epsilon"], ""))
    for pair in row["associations"]:
        click.echo(
            f"  {visible(pair['part_a'])} and {visible(pair['part_b'])}: covariance "
            f"{pair['covariance']:.4f} [{pair['covariance_low']:.4f}, "
            f"{pair['covariance_high']:.4f}], correlation {pair['correlation']:.4f} "
            f"[{pair['correlation_low']:.4f}, {pair['correlation_high']:.4f}]"
        )


def _multi_select_lines(row: dict[str, Any]) -> None:
    """Each item's share, the co-occurrence table and any conditional share."""
    click.echo(
        f"{visible(row['question_id']):<16}{row['n']:>9,}  ({visible(row['mechanism'])}, "
        f"ε {row['epsilon']:.4f} in total; share choosing each item; estimate = unbiased "
        "clipped to [0, 1])"
    )
    for item in row["items"]:
        click.echo(_line(f"  {visible(item['item'])}", item, row["epsilon"], ""))
    names = [visible(name)[:10] for name in row["cooccurrence"]["items"]]
    click.echo(f"{'':<16}co-occurrence: share choosing both (diagonal: the item's share)")
    click.echo(f"{'':<16}{'':<12}" + "".join(f"{name:>11}" for name in names))
    for name, cells in zip(names, row["cooccurrence"]["estimate"], strict=True):
        click.echo(f"{'':<16}{name:<12}" + "".join(f"{cell:>11.4f}" for cell in cells))
    if "conditional" in row:
        share = row["conditional"]
        given, item = visible(share["given"]), visible(share["item"])
        if not share["defined"]:
            click.echo(
                f"{'':<16}among those who chose {given}: {item} undefined (the estimated "
                f"share choosing {given} is not above 0)"
            )
            return
        click.echo(
            f"{'':<16}among those who chose {given}: {item} {share['estimate']:.4f} "
            f"[{share['ci_low']:.4f}, {share['ci_high']:.4f}], std err "
            f"{share['std_error']:.4f} (ratio of estimates, delta method)"
        )


def _notes(row: dict[str, Any]) -> None:
    """What a question's interval promises, and its release and central ε, if any."""
    if row["n"] == 0:
        return
    qid = visible(row["question_id"])
    interval = visible(row["method"]) + (f"; {visible(row['coverage'])}" if row["coverage"] else "")
    click.echo(f"{qid}: interval {interval}")
    if row.get("joint_coverage"):
        click.echo(f"{qid}: {visible(row['joint_coverage'])}")
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


def _line(label: str, row: dict[str, Any], epsilon: float, n: str) -> str:
    return (
        f"{label:<16}{n:>9}  {row['estimate']:>8.4f}  {row['estimate_raw']:>8.4f}  "
        f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]  {row['std_error']:>7.4f}  {epsilon:.4f}"
    )
