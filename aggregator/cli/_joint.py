"""``--part`` for ``plan`` and ``simulate --type joint``: a joint question from the command line."""

from __future__ import annotations

import re
from collections.abc import Sequence

import click

from deniable.shared.mechanisms import FrequencyOracle
from deniable.shared.questions import question_from_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["PART_HELP", "joint_question", "part_spec"]

PART_HELP = (
    "joint: one part, repeated in order (2..8): ID (yes/no), ID=A|B|C (one of the options) "
    "or ID=MIN..MAX/BINS (a number in BINS equal bins)."
)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMERIC = re.compile(rf"({_NUMBER})\.\.({_NUMBER})/(\d+)")


def part_spec(text: str) -> dict[str, object]:
    """One ``--part`` as a survey spec's part: ``ID``, ``ID=A|B|C`` or ``ID=MIN..MAX/BINS``."""
    part_id, sep, domain = text.partition("=")
    if not sep:
        return {"id": part_id, "text": part_id}
    numeric = _NUMERIC.fullmatch(domain)
    if numeric:
        lo, hi, bins = numeric.groups()
        return {"id": part_id, "text": part_id, "type": "numeric",
                "min": float(lo), "max": float(hi), "bins": int(bins)}  # fmt: skip
    return {"id": part_id, "text": part_id, "type": "categorical", "options": domain.split("|")}


def joint_question(
    parts: Sequence[str], mechanism: str | None, epsilon: float | None
) -> tuple[pb.Question, FrequencyOracle]:
    """The joint question ``--part`` options describe, checked as a survey spec would be.

    Raises:
        click.UsageError: no ε, or a part or the product domain the spec refuses (named).
    """
    if epsilon is None:
        raise click.UsageError("--type joint needs --epsilon")
    if not parts:
        raise click.UsageError("--type joint needs --part, once per part (e.g. --part a --part b)")
    spec = {"id": "simulated", "text": "Simulated joint question", "type": "joint",
            "epsilon": epsilon, "mechanism": mechanism or "auto",
            "parts": [part_spec(part) for part in parts]}  # fmt: skip
    try:
        question, oracle = question_from_spec(spec, "--part")
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    return question, oracle  # type: ignore[return-value]  # joint mechanisms are oracles
