"""Concurrent spends, from threads and from processes, never overspend: exactly floor(total/ε)."""

from __future__ import annotations

import multiprocessing
import threading
from fractions import Fraction

import pytest

from deniable.aggregator.central.curator.ledger import BudgetExceededError, open_ledger

DS = "survey"
THREADS = 8
PROCESSES = 4


def _spend_until_refused(
    url: str, analyst: str, epsilon: Fraction, start: threading.Barrier
) -> int:
    """Open the ledger (a connection of its own), then spend ε until refused; how many."""
    accepted = 0
    with open_ledger(url) as ledger:
        start.wait()
        while True:
            try:
                ledger.spend(DS, analyst, epsilon, Fraction(0), f"race by {analyst}")
            except BudgetExceededError:
                return accepted
            accepted += 1


def _in_threads(url: str, analysts: list[str], epsilon: Fraction) -> list[int]:
    start = threading.Barrier(len(analysts))
    counts = [0] * len(analysts)

    def run(i: int) -> None:
        counts[i] = _spend_until_refused(url, analysts[i], epsilon, start)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(analysts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts


@pytest.mark.parametrize(
    ("total", "epsilon"),
    [(Fraction(1), Fraction(1, 10)), (Fraction(1), Fraction(3, 10)), (Fraction(2), Fraction(1, 7))],
)
def test_threads_of_many_analysts_take_exactly_the_dataset_total(
    ledger_url: str, total: Fraction, epsilon: Fraction
) -> None:
    analysts = [f"a{i}" for i in range(THREADS)]
    with open_ledger(ledger_url) as ledger:
        ledger.register(DS, total, Fraction(0), description="")
        for name in analysts:
            ledger.issue_token(DS, name, total, Fraction(0))  # each alone could spend it all
    counts = _in_threads(ledger_url, analysts, epsilon)
    with open_ledger(ledger_url) as ledger:
        balance = ledger.balance(DS)
    assert sum(counts) == len(balance.spends) == total // epsilon
    assert balance.spent_epsilon == sum((s.epsilon for s in balance.spends), Fraction(0))
    assert balance.spent_epsilon == epsilon * (total // epsilon) <= total


def test_threads_sharing_one_ledger_take_exactly_the_total(ledger_url: str) -> None:
    """The daemon's case: one ledger object, its worker threads spending at once."""
    analysts = [f"a{i}" for i in range(THREADS)]
    start = threading.Barrier(THREADS)
    counts = [0] * THREADS
    with open_ledger(ledger_url) as ledger:
        ledger.register(DS, Fraction(1), Fraction(0), description="")
        for name in analysts:
            ledger.issue_token(DS, name, Fraction(1), Fraction(0))

        def run(i: int) -> None:
            start.wait()
            while True:
                try:
                    ledger.spend(DS, analysts[i], Fraction(1, 20), Fraction(0), "race")
                except BudgetExceededError:
                    return
                counts[i] += 1

        threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert ledger.balance(DS).spent_epsilon == 1
    assert sum(counts) == 20


def test_threads_of_one_analyst_take_exactly_their_budget(ledger_url: str) -> None:
    with open_ledger(ledger_url) as ledger:
        ledger.register(DS, Fraction(1), Fraction(0), description="")
        ledger.issue_token(DS, "bob", Fraction(1, 2), Fraction(0))
    counts = _in_threads(ledger_url, ["bob"] * THREADS, Fraction(1, 10))
    with open_ledger(ledger_url) as ledger:
        assert ledger.balance(DS, "bob").spent_epsilon == Fraction(1, 2)
        assert ledger.balance(DS).spent_epsilon == Fraction(1, 2)
    assert sum(counts) == 5


def _process(url: str, analyst: str, epsilon: Fraction, start: threading.Barrier) -> int:
    return _spend_until_refused(url, analyst, epsilon, start)


def test_processes_take_exactly_the_dataset_total(ledger_url: str) -> None:
    total, epsilon = Fraction(3), Fraction(1, 10)
    analysts = ["custodian", "a1", "a2", "a3"][:PROCESSES]
    with open_ledger(ledger_url) as ledger:
        ledger.register(DS, total, Fraction(0), description="")
        for name in analysts[1:]:
            ledger.issue_token(DS, name, Fraction(2), Fraction(0))
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(PROCESSES)
        with context.Pool(PROCESSES) as pool:
            jobs = [pool.apply_async(_process, (ledger_url, a, epsilon, start)) for a in analysts]
            counts = [job.get() for job in jobs]
    with open_ledger(ledger_url) as ledger:
        balance = ledger.balance(DS)
        per_analyst = {a.name: a.spent_epsilon for a in ledger.analysts(DS)}
    assert sum(counts) == len(balance.spends) == 30
    assert balance.spent_epsilon == total
    assert all(per_analyst[name] <= Fraction(2) for name in analysts[1:])
    assert {name: epsilon * count for name, count in zip(analysts, counts, strict=True)} == {
        name: per_analyst.get(name, Fraction(0)) for name in analysts
    }
