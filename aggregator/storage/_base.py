"""The storage interface every backend implements (one contract test suite covers all)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = ["Storage", "StoredReport", "SubmitOutcome", "Tally"]


@dataclass(frozen=True)
class StoredReport:
    """One validated report as stored: ``payload`` is its deterministic serialization."""

    report_id: str
    survey_id: str
    question_id: str
    bit: int
    payload: bytes


@dataclass(frozen=True)
class SubmitOutcome:
    """How many reports a batch newly stored, and how many were stored before."""

    stored: int
    already_stored: int


@dataclass(frozen=True)
class Tally:
    """Running tally of one yes/no question: n reports, ``ones`` of them yes."""

    n: int
    ones: int


class Storage(ABC):
    """Surveys, the report log and running tallies.

    Every method is atomic. ``submit`` stores a whole batch and updates the tallies in the
    same transaction, and returns only after the transaction is durable.
    """

    @abstractmethod
    def create_survey(self, survey: pb.Survey) -> None:
        """Store a new survey (open) with zero tallies for each question."""

    @abstractmethod
    def get_survey(self, survey_id: str) -> pb.Survey | None:
        """The survey with its state and report count, or None."""

    @abstractmethod
    def list_surveys(self, include_closed: bool) -> list[pb.Survey]:
        """Surveys in creation order."""

    @abstractmethod
    def close_survey(self, survey_id: str) -> pb.Survey | None:
        """Mark the survey closed (idempotent); None if it does not exist."""

    @abstractmethod
    def submit(self, reports: list[StoredReport]) -> SubmitOutcome:
        """Store the reports not stored before, all or nothing, and update tallies.

        Raises:
            AlreadyExists: a report_id is stored with a different payload.
            FailedPrecondition: a survey was closed meanwhile.
        """

    @abstractmethod
    def tally(self, survey_id: str, question_id: str) -> Tally | None:
        """The running tally, or None for an unknown survey or question."""

    @abstractmethod
    def close(self) -> None:
        """Release the backend's resources."""
