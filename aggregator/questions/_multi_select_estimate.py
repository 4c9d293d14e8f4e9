"""A multi-select estimate in ``estimate``'s JSON and table: items, pairs, conditional share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deniable.aggregator.analysis.publishing import heat_map, interval_chart, intervals
from deniable.aggregator.questions._base import Emit
from deniable.shared.text import visible
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["multi_select_chart", "multi_select_fields", "multi_select_lines"]

OPTION_FIELDS = ("option", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "support")
PAIR_FIELDS = (
    "first", "second", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "support",
)  # fmt: skip
CONDITIONAL_FIELDS = (
    "given", "item", "estimate", "estimate_raw", "ci_low", "ci_high", "std_error", "defined",
)  # fmt: skip


def multi_select_fields(estimate: pb.Estimate, data: dict[str, Any]) -> None:
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
        data.pop(field, None)  # per item instead


def multi_select_lines(
    row: dict[str, Any], emit: Emit, line: Callable[[str, dict[str, Any], float, str], str]
) -> None:
    """Each item's share, the co-occurrence table and any conditional share."""
    emit(
        f"{visible(row['question_id']):<16}{row['n']:>9,}  ({visible(row['mechanism'])}, "
        f"ε {row['epsilon']:.4f} in total; share choosing each item; estimate = unbiased "
        "clipped to [0, 1])"
    )
    for item in row["items"]:
        emit(line(f"  {visible(item['item'])}", item, row["epsilon"], ""))
    names = [visible(name)[:10] for name in row["cooccurrence"]["items"]]
    emit(f"{'':<16}co-occurrence: share choosing both (diagonal: the item's share)")
    emit(f"{'':<16}{'':<12}" + "".join(f"{name:>11}" for name in names))
    for name, cells in zip(names, row["cooccurrence"]["estimate"], strict=True):
        emit(f"{'':<16}{name:<12}" + "".join(f"{cell:>11.4f}" for cell in cells))
    if "conditional" in row:
        share = row["conditional"]
        given, item = visible(share["given"]), visible(share["item"])
        if not share["defined"]:
            emit(
                f"{'':<16}among those who chose {given}: {item} undefined (the estimated "
                f"share choosing {given} is not above 0)"
            )
            return
        emit(
            f"{'':<16}among those who chose {given}: {item} {share['estimate']:.4f} "
            f"[{share['ci_low']:.4f}, {share['ci_high']:.4f}], std err "
            f"{share['std_error']:.4f} (ratio of estimates, delta method)"
        )


def multi_select_chart(qid: str, data: dict[str, Any]) -> str:
    """Each item's share with its interval, and the co-occurrence matrix as a heat map."""
    rows = intervals(data["items"], "item")
    matrix = data["cooccurrence"]
    names = [str(name) for name in matrix["items"]]
    tips = [
        [
            f"{names[i]} and {names[j]}: {matrix['estimate'][i][j]:.4f} "
            f"[{matrix['ci_low'][i][j]:.4f}, {matrix['ci_high'][i][j]:.4f}]"
            for j in range(len(names))
        ]
        for i in range(len(names))
    ]
    return (
        interval_chart(rows, 0.0, 1.0, title=f"{qid}: share choosing each item", bars=True)
        + "<h3>Co-occurrence: the share choosing both (diagonal: the item's share)</h3>"
        + heat_map(names, names, matrix["estimate"], title=f"{qid}: co-occurrence", tooltips=tips)
    )
