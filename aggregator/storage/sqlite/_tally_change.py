"""What the batches of one commit add to a question's tally, summed once per commit."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any

from deniable.aggregator.storage._base import ReportGroup, Selection, Tally
from deniable.shared.mechanisms import Mechanism

__all__ = ["TallyChange"]


class TallyChange:
    """One question's tally before a commit, and the groups of reports the commit adds.

    The reports of every batch are kept, not tallied one batch at a time: when the
    question's mechanism can join them (:meth:`Mechanism.join`), they are tallied in one
    call for the whole commit, which is what makes a commit of many small batches cheap.
    Other groups are tallied on their own, and the sums added up (tallies are sums, so
    both give the same exact integers).

    Example:
        >>> from deniable.shared.mechanisms import RandomizedResponse
        >>> import numpy as np
        >>> change = TallyChange(Tally(10, (4,)))
        >>> rr = RandomizedResponse(0.5)
        >>> group = ReportGroup("s", "q", np.arange(3), lambda keep: [], mechanism=rr,
        ...                     reports=np.array([True, False, True]))
        >>> change.add(group, slice(None), 3)
        >>> change.tally()
        Tally(n=13, sums=(6,))
    """

    def __init__(self, base: Tally) -> None:
        self.base = base
        self.count = 0
        self._mechanism: Mechanism | None = None
        self._parts: list[Any] = []  # joinable reports, by batch
        self._sums: list[list[int]] = []  # the sums of the other groups, by batch
        self._done: Tally | None = base

    @property
    def n(self) -> int:
        """Reports in the tally after the groups added so far."""
        return self.base.n + self.count

    def add(self, group: ReportGroup, keep: Selection, count: int, reports: Any = None) -> None:
        """Add the ``count`` reports of ``group`` that ``keep`` selects.

        ``reports``: the group's reports as the storage read them (an unread group's);
        by default the group's own.
        """
        self.count += count
        self._done = None
        mechanism = group.mechanism
        if reports is None:
            reports = group.reports
        if mechanism is not None and reports is not None:
            if self._mechanism is None or self._mechanism is mechanism:
                self._mechanism = mechanism
                self._parts.append(reports if isinstance(keep, slice) else reports[keep])
                return
            if group.unread is not None:  # another mechanism object: tally it on its own
                self._sums.append(mechanism.tally(reports[keep]))
                return
        self._sums.append(group.tally(keep))

    def tally(self) -> Tally:
        """The question's tally after the groups added so far (computed once)."""
        if self._done is None:
            sums = list(self._sums)
            if self._parts:
                assert self._mechanism is not None
                sums.extend(self._joined_sums(self._mechanism))
            total = [sum(column) for column in zip_longest(*sums, fillvalue=0)]
            self._done = self.base.plus(self.count, total)
        return self._done

    def _joined_sums(self, mechanism: Mechanism) -> list[list[int]]:
        if len(self._parts) == 1:
            return [mechanism.tally(self._parts[0])]
        joined = mechanism.join(self._parts)
        if joined is None:
            return [mechanism.tally(part) for part in self._parts]
        self._parts = [joined]  # a release in mid-commit, then more: join once more later
        return [mechanism.tally(joined)]
