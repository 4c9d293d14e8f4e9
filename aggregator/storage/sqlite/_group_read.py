"""Reading the received values of a commit's batches, one question at a time for all of them.

A batch's groups may reach the storage unread (:class:`Unread`): checked against their
survey and question, but their values not yet validated and decoded by the question's
mechanism. A commit then reads each question's values of all its batches in one call of
:meth:`Mechanism.read`, which costs about what reading one batch's does: for many small
batches (participants' calls, a report per question) that is most of the work saved. A
value the mechanism refuses refuses its batch alone, with the message the service would
have given; the others are read again without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deniable.aggregator.storage._base import ReportGroup, Submission
from deniable.shared.errors import InvalidArgument
from deniable.shared.mechanisms import Mechanism, ReportValueError

__all__ = ["read_groups"]

_Member = tuple[int, int]  # (batch, group) positions


def read_groups(
    submissions: Sequence[Submission],
) -> tuple[dict[tuple[int, int], Any], dict[int, BaseException]]:
    """The reports of every unread group, and the batches refused for a value.

    The reports are keyed by (batch, group) positions; the refusals by batch position
    (a refused batch must not be stored, and has no reports here).
    """
    errors: dict[int, BaseException] = {}
    while True:
        buckets: dict[tuple[str, str, str], list[_Member]] = {}
        for position, submission in enumerate(submissions):
            if position in errors:
                continue
            for index, group in enumerate(submission.groups):
                if group.unread is not None:
                    key = (group.survey_id, group.question_id, group.unread.field)
                    buckets.setdefault(key, []).append((position, index))
        if not buckets:
            return {}, errors
        read: dict[_Member, Any] = {}
        for (_, _, field), members in buckets.items():
            refused = _read(submissions, field, members, read)
            if refused is not None:
                errors[refused[0]] = refused[1]
                break
        else:
            return read, errors


def _read(
    submissions: Sequence[Submission], field: str, members: list[_Member], read: dict[_Member, Any]
) -> tuple[int, BaseException] | None:
    """Read one question's values of every batch; the first batch refused, if any."""
    groups = [submissions[position].groups[index] for position, index in members]
    mechanism = groups[0].mechanism
    assert mechanism is not None, "an unread group carries its mechanism"
    columns = [group.unread.values for group in groups if group.unread is not None]
    joined = _join(columns)
    if joined is None:  # columns of mixed forms: each on its own
        for member, group, column in zip(members, groups, columns, strict=True):
            refused = _read_one(submissions, mechanism, field, member, group, column, read)
            if refused is not None:
                return refused
        return None
    try:
        decoded = mechanism.read(field, joined)
    except ReportValueError as error:
        start = 0
        for member, column in zip(members, columns, strict=True):
            if error.row < start + len(column):
                return member[0], _refusal(submissions, member, error, error.row - start)
            start += len(column)
        raise  # pragma: no cover - the row is one of the columns'
    if len(members) == 1:
        read[members[0]] = decoded
        return None
    start = 0
    sliced = isinstance(decoded, np.ndarray)  # else a row mask, as decode promises
    for member, column in zip(members, columns, strict=True):
        end = start + len(column)
        if sliced:
            read[member] = decoded[start:end]
        else:
            mask = np.zeros(len(joined), dtype=bool)
            mask[start:end] = True
            read[member] = decoded[mask]
        start = end
    return None


def _read_one(
    submissions: Sequence[Submission],
    mechanism: Mechanism,
    field: str,
    member: _Member,
    group: ReportGroup,
    column: Any,
    read: dict[_Member, Any],
) -> tuple[int, BaseException] | None:
    try:
        read[member] = mechanism.read(field, column)
    except ReportValueError as error:
        return member[0], _refusal(submissions, member, error, error.row)
    return None


def _refusal(
    submissions: Sequence[Submission], member: _Member, error: ReportValueError, row: int
) -> InvalidArgument:
    """The error that refuses a batch for the value at ``row`` of one of its groups."""
    submission = submissions[member[0]]
    at = submission.positions[int(submission.groups[member[1]].rows[row])]
    return InvalidArgument(f"reports[{at}].{error.field}: {error.message}")


def _join(columns: list[Any]) -> Any | None:
    """The columns one after the other, or None if they are of different forms."""
    if len(columns) == 1:
        return columns[0]
    if all(isinstance(column, np.ndarray) for column in columns):
        if len({column.shape[1:] for column in columns}) == 1:
            return np.concatenate(columns)
        return None
    if all(isinstance(column, list) for column in columns):
        return [value for column in columns for value in column]
    return None
