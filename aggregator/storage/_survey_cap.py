"""A survey's ``max_reports``: its bounds, and the check a commit makes of each batch in turn."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from deniable.aggregator.storage._base import ReportGroup, Submission
from deniable.shared.errors import FailedPrecondition, InvalidArgument

__all__ = ["MAX_REPORTS", "CapCheck", "caps_of", "check_max_reports"]

MAX_REPORTS = 10**15
"""The largest ``max_reports`` a survey may have (0: no limit)."""


def check_max_reports(value: int) -> None:
    """Raise InvalidArgument naming ``max_reports`` unless it is 0..:data:`MAX_REPORTS`."""
    if not 0 <= value <= MAX_REPORTS:
        raise InvalidArgument(
            f"max_reports: must be 0 (no limit) or 1..{MAX_REPORTS:,} reports, got {value:,}"
        )


def caps_of(groups: Sequence[ReportGroup]) -> dict[str, int]:
    """The capped surveys of a batch's groups, with their ``max_reports``."""
    return {group.survey_id: group.max_reports for group in groups if group.max_reports}


class CapCheck:
    """A commit's new reports per capped survey, counted batch by batch, in commit order.

    A survey's reports are counted as ``stored`` (a callable the backend gives, asked
    once per survey, inside the commit) says, plus the new reports of the batches this
    commit admitted before. A batch whose new reports would take a survey past its
    ``max_reports`` is refused whole (FailedPrecondition) and counts for nothing; a
    batch with no new report for it (a resend) is never refused for it.
    """

    def __init__(self, stored: Callable[[str], int]) -> None:
        self._stored = stored
        self._counts: dict[str, int] = {}

    def admit(self, submission: Submission, new: Mapping[str, int]) -> FailedPrecondition | None:
        """Count the batch's ``new`` reports per survey; the error that refuses it, if any."""
        caps = caps_of(submission.groups)
        counts: dict[str, int] = {}
        for survey_id, cap in caps.items():
            fresh = new.get(survey_id, 0)
            if not fresh:
                continue
            count = self._counts.get(survey_id)
            if count is None:
                count = self._counts[survey_id] = self._stored(survey_id)
            if count + fresh > cap:
                first = next(g for g in submission.groups if g.survey_id == survey_id)
                return FailedPrecondition(
                    f"reports[{submission.positions[int(first.rows[0])]}]: survey "
                    f"{survey_id!r} is full: its {fresh:,} new report(s) in this batch would "
                    f"take it past its max_reports of {cap:,}; nothing stored"
                )
            counts[survey_id] = count + fresh
        self._counts.update(counts)
        return None
