"""Checking a received batch's groups of reports against their surveys, before it is stored."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from deniable.aggregator.storage import (
    Asked,
    ReportGroup,
    Storage,
    Submission,
    SubmitOutcome,
    replay_group,
)
from deniable.aggregator.storage.codec import Group
from deniable.shared.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    shown,
)
from deniable.shared.mechanisms import Mechanism
from deniable.shared.privacy import ReleaseSteps
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["GroupChecks", "PreparedBatch", "find_question"]


@dataclass(frozen=True)
class PreparedBatch:
    """A validated batch, ready for the storage: its submission and its repeats.

    Attributes:
        submission: what the storage stores (each distinct report once).
        repeats: reports of the request that repeated another exactly (counted as
            already stored).
    """

    submission: Submission
    repeats: int

    def response(self, outcome: SubmitOutcome) -> pb.SubmitReportsResponse:
        """The reply to the request, once the storage has stored the batch."""
        return pb.SubmitReportsResponse(
            stored=outcome.stored, already_stored=outcome.already_stored + self.repeats
        )


def find_question(survey: pb.Survey, question_id: str, where: str) -> pb.Question:
    """The survey's question with this id, or NotFound naming the field ``where``."""
    for question in survey.questions:
        if question.id == question_id:
            return question
    raise NotFound(f"{where}: survey {survey.id!r} has no question {shown(question_id)}")


class GroupChecks:
    """What each group of a received batch is checked against, cached per (survey, question).

    A survey's questions never change, so its spec is read once (into ``specs``, which
    the service shares) and each question's checks are built once; whether the survey is
    still open is checked by the storage inside the batch's transaction.

    Args:
        storage: the backend (whether it reads values itself: :attr:`Storage.reads_values`).
        survey: the survey as stored, or NotFound.
        mechanism: a question's mechanism (cached by the service).
        specs: open surveys' specs, by id.
    """

    def __init__(
        self,
        storage: Storage,
        survey: Callable[[str], pb.Survey],
        mechanism: Callable[[str, pb.Question], Mechanism],
        specs: dict[str, pb.Survey],
    ) -> None:
        self._storage = storage
        self._survey = survey
        self._mechanism = mechanism
        self._specs = specs
        # (survey, question) -> the survey, and what its groups are replayed against
        self._asked: dict[tuple[str, str], tuple[pb.Survey, Asked]] = {}

    def check(self, group: Group, positions: Sequence[int], enrolled: bool = False) -> ReportGroup:
        """Check a group of reports against its survey and question; its tally function.

        ``enrolled`` tells whether the batch carries an enrollment token: it must if, and
        only if, the survey requires enrollment. The group is then replayed against its
        question (:func:`replay_group`): its values are read by the question's mechanism
        here, or, for a backend that reads them itself (:attr:`Storage.reads_values`),
        left to it: it reads all the batches of a commit at once.
        """
        report = group.template
        known = self._asked.get((report.survey_id, report.question_id))
        if known is None:
            known = self._ask(group)
        survey, asked = known
        if survey.enrollment_required and not enrolled:
            raise Unauthenticated(
                f"reports[{group.first}]: survey {survey.id!r} requires an enrollment token"
            )
        if enrolled and not survey.enrollment_required:
            raise InvalidArgument(
                f"enrollment_token: survey {survey.id!r} of reports[{group.first}] does not "
                "use enrollment tokens; send its reports without one"
            )
        return replay_group(group, positions, asked, unread=self._storage.reads_values)

    def _ask(self, group: Group) -> tuple[pb.Survey, Asked]:
        """A group's survey (open when first seen), and its question's :class:`Asked`."""
        report = group.template
        where = f"reports[{group.first}]"
        survey = self._specs.get(report.survey_id)
        if survey is None:
            try:
                survey = self._survey(report.survey_id)
            except NotFound:
                raise NotFound(
                    f"{where}.survey_id: unknown survey {shown(report.survey_id)}"
                ) from None
            if survey.state != pb.SURVEY_STATE_OPEN:
                raise FailedPrecondition(f"{where}: survey {survey.id!r} is closed")
            self._specs[survey.id] = survey
        question = find_question(survey, report.question_id, f"{where}.question_id")
        releases = ReleaseSteps.of(survey.min_reports, survey.release_step)
        mechanism = self._mechanism(survey.id, question)
        asked = Asked(survey.id, question, mechanism, releases, survey.max_reports)
        self._asked[survey.id, question.id] = (survey, asked)
        return survey, asked
