"""Group commit by one thread: every batch queued while a commit runs shares the next one."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["Committer", "CommitterClosedError"]

_logger = logging.getLogger("deniable.aggregator")

Item = TypeVar("Item")
Result = TypeVar("Result")


class CommitterClosedError(RuntimeError):
    """The committer was closed: the item was not committed."""


class Committer(Generic[Item, Result]):
    """A thread that commits the queued items, all of them in one call of ``commit``.

    :meth:`submit` queues an item and returns a future at once; the thread takes every
    item queued so far (up to ``max_weight`` in all, where ``weight`` says what an item
    weighs, e.g. its reports), calls ``commit`` with them, and resolves each item's
    future with its result or error. Items that arrive while a commit runs (while its
    fsync waits for the disk) are the next group, so concurrent callers share one durable
    write, and no caller thread waits on a lock for another's commit: a caller waits on
    its own future only (an event loop can await it).

    ``commit`` returns one result per item, in order, where an exception instance is that
    item's error; if it raises, every item of the group gets that error. ``after`` runs
    in the thread after each group (for work that must not delay the group's replies).

    Example:
        >>> committer = Committer(lambda items: [i * 10 for i in items], name="doc")
        >>> committer.submit(4).result()
        40
        >>> committer.close()
    """

    def __init__(
        self,
        commit: Callable[[Sequence[Item]], Sequence[Result | BaseException]],
        *,
        name: str,
        weight: Callable[[Item], int] = lambda item: 1,
        max_weight: int = 1 << 62,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._commit = commit
        self._weight = weight
        self._max_weight = max_weight
        self._after = after
        self._queue: deque[tuple[Item, Future[Result]]] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._busy = False  # a group is being committed (by the thread or a caller)
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, item: Item) -> Future[Result]:
        """Queue ``item``; its future resolves once its group is committed (or failed).

        Raises:
            CommitterClosedError: the committer is closed.
        """
        future: Future[Result] = Future()
        with self._ready:
            if self._closing:
                raise CommitterClosedError("the storage is closed; nothing was stored")
            self._queue.append((item, future))
            if len(self._queue) == 1:
                self._ready.notify()
        return future

    def submit_or_commit(self, item: Item) -> Future[Result]:
        """Commit ``item`` in the calling thread if nothing else is queued or committing.

        A lone caller then pays no hand-over to the thread and back (on a virtual machine,
        waking an idle thread can cost more than the commit's own work); its future is
        resolved on return. Otherwise the item is queued as by :meth:`submit`. Batches
        that arrive during the caller's commit are left to the thread.
        """
        with self._ready:
            alone = not self._busy and not self._queue and not self._closing
            if alone:
                self._busy = True
        if not alone:
            return self.submit(item)
        future: Future[Result] = Future()
        self._commit_one_group([(item, future)])
        return future

    def _take(self) -> list[tuple[Item, Future[Result]]] | None:
        """The next group (at least one item, at most ``max_weight``), None once closed."""
        with self._ready:
            while not self._queue or self._busy:
                if self._closing and not self._queue:
                    return None
                self._ready.wait()
            self._busy = True
            group = [self._queue.popleft()]
            total = self._weight(group[0][0])
            while self._queue and total + self._weight(self._queue[0][0]) <= self._max_weight:
                entry = self._queue.popleft()
                total += self._weight(entry[0])
                group.append(entry)
            return group

    def _run(self) -> None:
        while (group := self._take()) is not None:
            self._commit_one_group(group)

    def _commit_one_group(self, group: list[tuple[Item, Future[Result]]]) -> None:
        """Commit a group taken as busy; then wake the thread if more is queued."""
        try:
            self._resolve(group)
        finally:
            with self._ready:
                self._busy = False
                if self._queue:
                    self._ready.notify()
        self._after_group()

    def _resolve(self, group: list[tuple[Item, Future[Result]]]) -> None:
        """Commit a group and resolve each item's future with its result or error.

        An item whose future was cancelled while it waited (its caller gave up: grpc.aio
        cancels the handler, asyncio cancels the future it awaits) is left out: nothing
        acknowledged it. The others are marked running first, so that from here on a
        cancellation cannot withdraw them and every one of them is resolved.
        """
        group = [entry for entry in group if entry[1].set_running_or_notify_cancel()]
        if not group:
            return
        results: Sequence[Result | BaseException]
        try:
            results = self._commit([item for item, _ in group])
        except BaseException as error:  # every item of the group gets it
            results = [error] * len(group)
        if len(results) != len(group):
            mismatch = f"commit gave {len(results)} results for {len(group)} items"
            results = [RuntimeError(mismatch)] * len(group)
        for (_, future), outcome in zip(group, results, strict=True):
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def _after_group(self) -> None:
        if self._after is not None:
            try:
                self._after()
            except Exception:  # the next group must still be committed
                _logger.exception("work after a commit failed")

    def close(self) -> None:
        """Commit what is queued, then stop the thread (closing twice is allowed)."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
