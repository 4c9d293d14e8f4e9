"""A joint question's estimate and simulation as text and JSON: cross-tab, marginals, pairs."""

from __future__ import annotations

from typing import Any

from deniable.aggregator.analysis.publishing import (
    escape,
    fmt,
    heat_map,
    interval_chart,
    intervals,
)
from deniable.aggregator.analysis.simulation import JointSimulation
from deniable.aggregator.questions._base import Emit
from deniable.aggregator.questions._estimate_text import estimate_line
from deniable.shared.questions.joint import cell_names, part_values
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["joint_chart", "joint_fields", "joint_table", "simulation_lines"]

OPTION_FIELDS = ("option", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "support")
ASSOCIATION_FIELDS = pb.AssociationEstimate.DESCRIPTOR.fields


def joint_fields(estimate: pb.Estimate, data: dict[str, Any]) -> None:
    """Each part's marginal, each pair's association, and what their intervals promise."""
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


def joint_table(row: dict[str, Any], emit: Emit) -> None:
    """A joint question's cross-tab as a table, its marginals and associations."""
    marginals = row["marginals"]
    first = [visible(v["option"]) for v in marginals[0]["values"]]
    cells = [option["estimate"] for option in row["options"]]
    columns = len(cells) // len(first)
    names = [visible(option["option"]).split(", ", 1)[1] for option in row["options"][:columns]]
    width = max(8, *(len(name) for name in names))
    side = max(len(visible(marginals[0]["part"])), *(len(v) for v in first), len("total"))
    emit(f"  cross-tab of {visible(marginals[0]['part'])} (rows) by the other parts:")
    emit(f"    {'':<{side}}" + "".join(f"  {name:>{width}}" for name in names) + "     total")
    for r, label in enumerate(first):
        shares = cells[r * columns : (r + 1) * columns]
        total = marginals[0]["values"][r]["estimate"]
        emit(
            f"    {label:<{side}}"
            + "".join(f"  {v:>{width}.4f}" for v in shares)
            + f"  {total:>8.4f}"
        )
    sums = [sum(cells[c::columns]) for c in range(columns)]
    emit(f"    {'total':<{side}}" + "".join(f"  {v:>{width}.4f}" for v in sums))
    for marginal in marginals:
        emit(f"  marginal of {visible(marginal['part'])}:")
        for value in marginal["values"]:
            emit(estimate_line(f"    {visible(value['option'])}", value, row["epsilon"], ""))
    for pair in row["associations"]:
        emit(
            f"  {visible(pair['part_a'])} and {visible(pair['part_b'])}: covariance "
            f"{pair['covariance']:.4f} [{pair['covariance_low']:.4f}, "
            f"{pair['covariance_high']:.4f}], correlation {pair['correlation']:.4f} "
            f"[{pair['correlation_low']:.4f}, {pair['correlation_high']:.4f}]"
        )


def simulation_lines(result: JointSimulation, grpc_info: dict[str, Any] | None, emit: Emit) -> None:
    """A simulated joint question: each cell, marginal and pair with its coverage."""
    first = result.first
    emit(
        f"Simulated {result.participants:,} participants answering a joint question of "
        f"{result.k} cells in ONE report ({result.mechanism}, epsilon = {result.epsilon:.4f}; "
        f"randomness: {result.randomness})"
    )
    emit(f"{'cell':<34}{'truth':>8}{'estimate':>10}  {'CI':<18}{'coverage':>9}")
    for name, truth, option, cover in zip(
        result.cells, result.truth, first["options"], result.cell_coverage, strict=True
    ):
        ci = f"[{option['ci_low']:.4f}, {option['ci_high']:.4f}]"
        emit(f"{name:<34}{truth:>8.4f}{option['estimate']:>10.4f}  {ci:<18}{cover:>9.4f}")
    for marginal in first["marginals"]:
        coverage = result.marginal_coverage[marginal["part"]]
        shown = ", ".join(
            f"{value['option']} {value['estimate']:.4f} (coverage {cover:.4f})"
            for value, cover in zip(marginal["values"], coverage, strict=True)
        )
        emit(f"marginal {marginal['part']}: {shown}")
    for truths, pair in zip(result.associations, first["associations"], strict=True):
        emit(
            f"{pair['part_a']} and {pair['part_b']}: correlation {pair['correlation']:.4f} "
            f"[{pair['correlation_low']:.4f}, {pair['correlation_high']:.4f}] (truth "
            f"{truths['correlation']:.4f}, coverage {truths['correlation_coverage']:.4f}); "
            f"covariance {pair['covariance']:.4f} (truth {truths['covariance']:.4f}, coverage "
            f"{truths['covariance_coverage']:.4f})"
        )
    if result.repeats == 1:
        emit(
            "One survey: each coverage is 1 if its interval covered the truth, else 0 "
            "(--repeats N measures coverage)"
        )
    else:
        emit(
            f"Coverage over {result.repeats:,} repeats (nominal {result.confidence:g} each); "
            f"all cells at once: {result.cells_all_coverage:.4f}"
        )
    if grpc_info is not None:
        emit(
            f"Transport: gRPC to {grpc_info['address']} "
            f"({'embedded daemon' if grpc_info['embedded'] else 'remote'}), "
            f"{grpc_info['reports_sent']:,} reports"
        )


def joint_chart(question: pb.Question, data: dict[str, Any]) -> str:
    """The cross-tab as a heat map (last part across, others down), marginals, associations.

    The last part varies fastest in cell order, so each row is one combination of the
    other parts: with three parts or more the map grows down, not across, and stays legible.
    """
    qid = question.id
    marginals = data["marginals"]
    *leading, last = question.joint.parts
    combos = cell_names(pb.Question(joint=pb.JointQuestion(parts=leading)))
    names = [f"{last.id}={value}" for value in part_values(last)]
    cells = data["options"]
    if len(cells) != len(combos) * len(names):
        raise ValueError(
            f"question {qid!r}: {len(cells)} cells, but its parts make {len(combos)}×{len(names)}"
        )
    columns = len(names)
    grid = [
        [c["estimate"] for c in cells[r * columns : (r + 1) * columns]] for r in range(len(combos))
    ]
    tips = [
        [
            f"{c['option']}: {c['estimate']:.4f} [{c['ci_low']:.4f}, {c['ci_high']:.4f}]"
            for c in cells[r * columns : (r + 1) * columns]
        ]
        for r in range(len(combos))
    ]
    down = " and ".join(escape(part.id) for part in leading)
    parts = [
        f"<h3>Cross-tab: {down} (rows) by {escape(last.id)} (columns)</h3>",
        heat_map(combos, names, grid, title=f"{qid}: cross-tab", tooltips=tips),
    ]
    for marginal in marginals:
        part = str(marginal["part"])
        rows = intervals(marginal["values"])
        parts.append(f"<h3>Marginal of {escape(part)}</h3>")
        parts.append(interval_chart(rows, 0.0, 1.0, title=f"{qid}: {part}", bars=True))
    if data.get("associations"):
        body = "".join(
            f"<tr><td>{escape(str(a['part_a']))} and {escape(str(a['part_b']))}</td>"
            f"<td>{fmt(a['covariance'])} [{fmt(a['covariance_low'])}, "
            f"{fmt(a['covariance_high'])}]</td><td>{fmt(a['correlation'])} "
            f"[{fmt(a['correlation_low'])}, {fmt(a['correlation_high'])}]</td></tr>"
            for a in data["associations"]
        )
        parts.append(
            "<table><thead><tr><th>parts</th><th>covariance</th><th>correlation</th></tr>"
            f"</thead><tbody>{body}</tbody></table>"
        )
    return "".join(parts)
