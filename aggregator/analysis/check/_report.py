"""The result of a tally check: per survey and question, the stored and recomputed figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deniable.aggregator.storage import Tally
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["CheckReport", "QuestionCheck", "SurveyCheck", "padded"]


def _state_name(state: int) -> str:
    """``open`` or ``closed`` (the number for a state this code does not know)."""
    if state in pb.SurveyState.values():
        return pb.SurveyState.Name(state).removeprefix("SURVEY_STATE_").lower()  # type: ignore[arg-type]
    return str(state)


def padded(sums: tuple[int, ...], length: int) -> tuple[int, ...]:
    """``sums`` extended with zeros to ``length`` entries."""
    return sums + (0,) * (length - len(sums))


@dataclass(frozen=True)
class QuestionCheck:
    """One question's stored tally (None if its row is missing) and the recomputed one."""

    question_id: str
    stored: Tally | None
    recomputed: Tally

    @property
    def ok(self) -> bool:
        """Same n and the same sums (a missing trailing sum counts as zero)."""
        if self.stored is None or self.stored.n != self.recomputed.n:
            return False
        length = max(len(self.stored.sums), len(self.recomputed.sums))
        return padded(self.stored.sums, length) == padded(self.recomputed.sums, length)


@dataclass
class SurveyCheck:
    """What the check found in one survey's log.

    Attributes:
        reports: reports in the log, counting each occurrence of a repeated id.
        duplicates: occurrences of a report id beyond its first in the survey's log.
        duplicate_ids: a few of the repeated ids.
        problems: log rows that cannot be decoded or do not fit the survey, and tally
            rows of unknown questions.
    """

    survey_id: str
    title: str
    state: int
    log_rows: int = 0
    reports: int = 0
    duplicates: int = 0
    duplicate_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    questions: list[QuestionCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every tally matches, no id repeats and every row decodes."""
        return not self.duplicates and not self.problems and all(q.ok for q in self.questions)

    @property
    def distinct_reports(self) -> int:
        """Distinct report ids in the log."""
        return self.reports - self.duplicates


@dataclass
class CheckReport:
    """The check of every survey of a database."""

    surveys: list[SurveyCheck]

    @property
    def ok(self) -> bool:
        """True when every survey passed."""
        return all(survey.ok for survey in self.surveys)

    def mismatches(self) -> list[str]:
        """One line per failed item, naming the survey and question with both figures."""
        lines = []
        for survey in self.surveys:
            where = f"survey {survey.survey_id}"
            for question in survey.questions:
                if question.ok:
                    continue
                stored = question.stored
                lines.append(
                    f"{where} question {question.question_id}: "
                    + (
                        "no stored tally row"
                        if stored is None
                        else f"n stored {stored.n}, recomputed {question.recomputed.n}; "
                        f"sums stored {list(stored.sums)}, "
                        f"recomputed {list(question.recomputed.sums)}"
                    )
                )
            if survey.duplicates:
                examples = ", ".join(survey.duplicate_ids)
                lines.append(
                    f"{where}: {survey.duplicates} repeated report ids in the log"
                    + (f" (e.g. {examples})" if examples else "")
                )
            lines.extend(f"{where}: {problem}" for problem in survey.problems)
        return lines

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: per survey and question, stored and recomputed figures."""
        return {
            "ok": self.ok,
            "surveys": [
                {
                    "survey_id": s.survey_id,
                    "title": s.title,
                    "state": _state_name(s.state),
                    "ok": s.ok,
                    "log_rows": s.log_rows,
                    "reports": s.reports,
                    "distinct_reports": s.distinct_reports,
                    "duplicate_reports": s.duplicates,
                    "duplicate_ids": s.duplicate_ids,
                    "problems": s.problems,
                    "questions": [
                        {
                            "question_id": q.question_id,
                            "ok": q.ok,
                            "n_stored": None if q.stored is None else q.stored.n,
                            "n_recomputed": q.recomputed.n,
                            "sums_stored": None if q.stored is None else list(q.stored.sums),
                            "sums_recomputed": list(q.recomputed.sums),
                        }
                        for q in s.questions
                    ],
                }
                for s in self.surveys
            ],
        }
