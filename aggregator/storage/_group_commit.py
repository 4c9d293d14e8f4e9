"""Group commit: batches that arrive while a commit runs share the next commit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, cast

__all__ = ["GroupCommitter"]

Item = TypeVar("Item")
Result = TypeVar("Result")


class _Ticket(Generic[Item, Result]):
    """One submitted item and, once its group is committed, its result or error."""

    __slots__ = ("done", "item", "result")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.done = False
        self.result: Result | BaseException | None = None


class GroupCommitter(Generic[Item, Result]):
    """Commits items submitted by concurrent threads, every waiting item in one go.

    A thread that submits an item queues it and takes ``lock``. If another thread has
    committed the item meanwhile, it returns that result; otherwise it becomes the
    leader and commits everything queued so far with one call of ``commit``. A single
    caller therefore commits alone and at once, while concurrent callers share the
    durable write (one fsync) that would otherwise be paid per item.

    ``commit`` runs with ``lock`` held and returns one result per item, in order, where
    an exception instance is that item's error. If ``commit`` itself raises, every item
    of the group gets that error.
    """

    def __init__(
        self,
        commit: Callable[[Sequence[Item]], Sequence[Result | BaseException]],
        lock: threading.Lock,
    ) -> None:
        self._commit = commit
        self._lock = lock
        self._queue_lock = threading.Lock()
        self._queue: list[_Ticket[Item, Result]] = []

    def submit(self, item: Item) -> Result:
        """Commit ``item`` (perhaps with others); its result, or raise its error."""
        ticket: _Ticket[Item, Result] = _Ticket(item)
        with self._queue_lock:
            self._queue.append(ticket)
        with self._lock:
            if not ticket.done:
                with self._queue_lock:
                    group, self._queue = self._queue, []
                results: Sequence[Result | BaseException]
                try:
                    results = self._commit([t.item for t in group])
                except BaseException as error:
                    results = [error] * len(group)
                if len(results) != len(group):
                    mismatch = f"commit gave {len(results)} results for {len(group)} items"
                    results = [RuntimeError(mismatch)] * len(group)
                for member, outcome in zip(group, results, strict=True):
                    member.result = outcome
                    member.done = True
        if isinstance(ticket.result, BaseException):
            raise ticket.result
        return cast(Result, ticket.result)  # set by the leader
