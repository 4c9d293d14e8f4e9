"""How the ``curate`` commands end on an error: one line, and the exit code of its kind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import fail

__all__ = ["BUDGET_EXIT", "curator_errors"]

BUDGET_EXIT = 5
"""Exit code of a query the budget refuses (as every refusal of the tools: 5)."""


@contextmanager
def curator_errors() -> Iterator[None]:
    """A refusal by the budget is exit 5; any other bad input one line and exit 2."""
    try:
        yield
    except curator.BudgetExceededError as error:
        fail(str(error), BUDGET_EXIT)
    except curator.ReleaseNotFoundError as error:
        fail(str(error), 4)
    except ValueError as error:
        fail(str(error), 2)
