"""Replaying a decoded group of reports against the question it answers: one check for all.

The daemon replays each group of a received batch (:mod:`deniable.aggregator.server`);
``check`` and ``migrate`` replay each log row as the batch it was (:class:`StoredSurvey`).
All three call :func:`replay_group`, so a stored batch fits its survey exactly when the
daemon would have taken it, and is tallied as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deniable.aggregator.storage._base import ReportGroup, Unread
from deniable.aggregator.storage.codec import DecodedBatch, Group
from deniable.shared.errors import FailedPrecondition, InvalidArgument
from deniable.shared.mechanisms import (
    Mechanism,
    ReportValueError,
    describe_mechanism,
    mechanism_of,
)
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Asked", "StoredSurvey", "replay_group"]


@dataclass(frozen=True)
class Asked:
    """What every group of reports answering one question is replayed against.

    Attributes:
        survey_id: the survey the question belongs to.
        question: the question (its id and mechanism).
        mechanism: the question's mechanism, built once.
        releases: the survey's release steps, or None when it is not stepped.
        max_reports: the survey's cap, which the storage enforces in the commit (0: none).
    """

    survey_id: str
    question: pb.Question
    mechanism: Mechanism
    releases: ReleaseSteps | None
    max_reports: int = 0


def _unread_tally(keep: Any) -> list[int]:
    raise AssertionError("an unread group is tallied only once the storage has read it")


def replay_group(
    group: Group, positions: Sequence[int], asked: Asked, *, unread: bool = False
) -> ReportGroup:
    """A decoded group as the storage takes it, once it fits the question it answers.

    The reports' mechanism must be the question's; their values are read by it, or, with
    ``unread``, left for a backend that reads them itself (:attr:`Storage.reads_values`),
    all the batches of a commit at once.

    Raises:
        FailedPrecondition: the reports' mechanism differs from the question's.
        InvalidArgument: a value the mechanism refuses (naming the report and field).
    """
    report = group.template
    question = asked.question
    if report.mechanism != question.mechanism:
        raise FailedPrecondition(
            f"reports[{group.first}].mechanism: {describe_mechanism(report.mechanism)} "
            f"differs from the survey's {describe_mechanism(question.mechanism)}"
        )
    field = str(report.WhichOneof("value"))
    mechanism = asked.mechanism
    if unread:
        return ReportGroup(
            asked.survey_id, question.id, group.rows, _unread_tally, asked.releases, mechanism,
            unread=Unread(field, group.values), max_reports=asked.max_reports,
        )  # fmt: skip
    try:
        reports = mechanism.read(field, group.values)
    except ReportValueError as error:
        at = positions[int(group.rows[error.row])]
        raise InvalidArgument(f"reports[{at}].{error.field}: {error.message}") from None
    return ReportGroup(
        survey_id=asked.survey_id,
        question_id=question.id,
        rows=group.rows,
        tally=lambda keep: mechanism.tally(reports[keep]),
        releases=asked.releases,
        mechanism=mechanism,
        reports=reports,
        max_reports=asked.max_reports,
    )


class StoredSurvey:
    """A survey whose log rows are replayed, each as the batch its daemon took.

    A copy stores what the source's daemon admitted, so its groups carry no
    ``max_reports``: the cap is not checked again while replaying.
    """

    def __init__(self, survey: pb.Survey) -> None:
        self.survey = survey
        self.questions = {question.id: question for question in survey.questions}
        self.steps = ReleaseSteps.of(survey.min_reports, survey.release_step)
        self._asked: dict[str, Asked] = {}

    def groups(self, batch: DecodedBatch) -> list[ReportGroup]:
        """Each group of a decoded log row, replayed (see :meth:`replay`)."""
        return [self.replay(group, batch.positions) for group in batch.groups]

    def replay(self, group: Group, positions: Sequence[int]) -> ReportGroup:
        """A group of a log row, replayed against the survey's question it answers.

        Raises:
            ValueError: the group belongs to another survey, or answers no question of
                this one, or the question's mechanism is invalid (naming it).
            FailedPrecondition, InvalidArgument: see :func:`replay_group`.
        """
        report = group.template
        where = f"reports[{group.first}]"
        if report.survey_id != self.survey.id:
            raise ValueError(f"{where}.survey_id: {report.survey_id!r} in this survey's log")
        asked = self._asked.get(report.question_id)
        if asked is None:
            question = self.questions.get(report.question_id)
            if question is None:
                raise ValueError(f"{where}.question_id: no question {report.question_id!r}")
            try:
                mechanism = mechanism_of(question)
            except ValueError as error:
                raise ValueError(f"question {question.id!r}: {error}") from None
            asked = self._asked[question.id] = Asked(
                self.survey.id, question, mechanism, self.steps
            )
        return replay_group(group, positions, asked)
