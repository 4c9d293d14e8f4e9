"""Enrollment tokens: generation, hashing at rest, and the rules a token's batch must follow.

A survey created with ``enrollment_required`` accepts reports only in batches that carry
an enrollment token issued for it (``IssueTokens``), and each token stores at most one
report per question. The aggregator keeps only each token's SHA-256 hash; the tokens
themselves appear once, in the ``IssueTokens`` response, and are never logged.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence

from deniable.aggregator.storage.codec import Group
from deniable.shared.errors import InvalidArgument, shown

__all__ = [
    "MAX_MIN_REPORTS",
    "MAX_TOKENS",
    "TOKEN_BYTES",
    "check_min_reports",
    "check_token_batch",
    "check_token_count",
    "gate_message",
    "new_tokens",
    "payload_digest",
    "token_hash",
]

MAX_TOKENS = 100_000  # per IssueTokens call
MAX_MIN_REPORTS = 10**9
TOKEN_BYTES = 24  # 192 random bits, 32 URL-safe characters


def new_tokens(count: int) -> list[str]:
    """``count`` fresh tokens of :data:`TOKEN_BYTES` random bytes from the OS CSPRNG."""
    return [secrets.token_urlsafe(TOKEN_BYTES) for _ in range(count)]


def token_hash(token: str) -> bytes:
    """The SHA-256 digest under which a token is stored and looked up.

    No salt and no slow hash: a salt (or key stretching) protects low-entropy secrets such
    as passwords from precomputed tables and guessing, but a token holds 192 random bits,
    so inverting its hash is as hard as guessing the token. An unsalted hash also makes the
    lookup a single indexed equality match.
    """
    return hashlib.sha256(token.encode("utf-8")).digest()


def payload_digest(payload: bytes) -> bytes:
    """The SHA-256 of a report's payload, which tells an exact resend from another report."""
    return hashlib.sha256(payload).digest()


def check_token_count(count: int) -> None:
    """Raise InvalidArgument naming ``count`` unless it is 1..:data:`MAX_TOKENS`."""
    if not 1 <= count <= MAX_TOKENS:
        raise InvalidArgument(f"count: must be 1..{MAX_TOKENS:,} tokens per call, got {count}")


def check_min_reports(value: int) -> None:
    """Raise InvalidArgument naming ``min_reports`` unless it is 0..:data:`MAX_MIN_REPORTS`."""
    if not 0 <= value <= MAX_MIN_REPORTS:
        raise InvalidArgument(f"min_reports: must be 0..{MAX_MIN_REPORTS:,}, got {value}")


def check_token_batch(groups: Sequence[Group], positions: Sequence[int]) -> None:
    """A batch with a token holds one survey's reports, at most one per question.

    ``groups`` are in the order of their first report (the decoder's order), so the first
    group's survey is that of ``reports[0]``.

    Raises:
        InvalidArgument: a report of another survey, or a second report for a question,
            naming the report's index.
    """
    survey_id = groups[0].template.survey_id
    answered: dict[str, int] = {}  # question id -> request index of its report
    for group in groups:
        if group.template.survey_id != survey_id:
            raise InvalidArgument(
                f"reports[{group.first}].survey_id: {shown(group.template.survey_id)} differs "
                f"from reports[0]'s {shown(survey_id)}; a batch with an enrollment token holds the "
                "reports of one survey"
            )
        question_id = group.template.question_id
        indexes = [positions[row] for row in group.rows[:2].tolist()]
        if question_id in answered:
            indexes = [answered[question_id], *indexes]
        if len(indexes) > 1:
            raise InvalidArgument(
                f"reports[{indexes[1]}].question_id: a second report for question "
                f"{shown(question_id)} (after reports[{indexes[0]}]); an enrollment token answers "
                "each question once"
            )
        answered[question_id] = indexes[0]


def gate_message(question_id: str, count: int, minimum: int) -> str:
    """Why an estimate is withheld: the question's report count and the survey's minimum."""
    noun = "report" if count == 1 else "reports"
    return (
        f"question {question_id!r} has {count:,} {noun}; the survey releases estimates "
        f"from {minimum:,}"
    )
