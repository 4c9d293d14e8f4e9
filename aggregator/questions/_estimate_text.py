"""Rows of ``estimate``'s table that several question types share."""

from __future__ import annotations

from typing import Any

from deniable.aggregator.questions._base import Emit
from deniable.shared.text import visible

__all__ = ["estimate_line", "option_lines", "share_line"]


def estimate_line(label: str, row: dict[str, Any], epsilon: float, n: str) -> str:
    """One row: label, n, estimate, unbiased, interval, standard error and ε."""
    return (
        f"{label:<16}{n:>9}  {row['estimate']:>8.4f}  {row['estimate_raw']:>8.4f}  "
        f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]  {row['std_error']:>7.4f}  {epsilon:.4f}"
    )


def share_line(row: dict[str, Any], emit: Emit) -> None:
    """A question with one estimate (a share or a mean): one row."""
    emit(estimate_line(visible(row["question_id"]), row, row["epsilon"], f"{row['n']:>9,}"))


def option_lines(row: dict[str, Any], emit: Emit) -> None:
    """A question estimated per option: a heading row, then a row per option."""
    emit(
        f"{visible(row['question_id']):<16}{row['n']:>9,}  ({visible(row['mechanism'])}, "
        f"ε {row['epsilon']:.4f}; estimate = projected onto the simplex, inside its CI; "
        "unbiased = raw, may lie outside it)"
    )
    for option in row["options"]:
        emit(estimate_line(f"  {visible(option['option'])}", option, row["epsilon"], ""))
