"""The ledger's records, its errors, and the checks of names and exact (ε, δ) it takes."""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from dataclasses import dataclass
from fractions import Fraction

from deniable.aggregator.central.curator._base import CuratorError

__all__ = [
    "CUSTODIAN",
    "TOKEN_PREFIX",
    "AlreadyImportedError",
    "Analyst",
    "AnalystBudget",
    "Balance",
    "BudgetExceededError",
    "DatasetBudget",
    "LedgerUnavailableError",
    "ReleaseSummary",
    "SpendEntry",
    "check_analyst",
    "check_dataset",
    "exact",
    "from_text",
    "new_token",
    "shown",
    "to_text",
    "token_hash",
]

CUSTODIAN = "custodian"
"""The analyst name of the custodian's own in-process queries: no token, bounded by the total."""
TOKEN_PREFIX = "dnc_"
"""Every analyst token starts with this (deniable curator), so a leaked one is recognisable."""

_DATASET = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_ANALYST = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


class BudgetExceededError(CuratorError):
    """A spend that would exceed the analyst's budget or the dataset's total: nothing was spent."""


class AlreadyImportedError(CuratorError):
    """Spends from this source were imported before, into the dataset named by ``dataset``."""

    def __init__(self, message: str, dataset: str) -> None:
        super().__init__(message)
        self.dataset = dataset


class LedgerUnavailableError(CuratorError):
    """The ledger's database cannot be reached or is busy: nothing was changed; retry later."""


@dataclass(frozen=True)
class DatasetBudget:
    """A registered dataset and its total (ε, δ), which cannot change once set."""

    name: str
    epsilon: Fraction
    delta: Fraction
    description: str
    registered_at: float


@dataclass(frozen=True)
class Analyst:
    """Who a live token belongs to: one analyst of one dataset."""

    dataset: str
    name: str


@dataclass(frozen=True)
class AnalystBudget:
    """One analyst's budget on a dataset, what they spent, and their token's state.

    The custodian (no token) has the dataset's total as its budget; ``live`` is False and
    ``issued_at`` None for it. ``revoked_at`` is set once the analyst's last token is revoked.
    """

    name: str
    epsilon: Fraction
    delta: Fraction
    spent_epsilon: Fraction
    spent_delta: Fraction
    live: bool
    issued_at: float | None
    revoked_at: float | None


@dataclass(frozen=True)
class SpendEntry:
    """One charged query: when (UTC seconds), by whom, what, and its exact (ε, δ)."""

    at: float
    analyst: str
    query: str
    epsilon: Fraction
    delta: Fraction


@dataclass(frozen=True)
class Balance:
    """A budget, what was spent of it, and what is left, exactly.

    ``analyst`` None: the dataset's total and everyone's spends. Otherwise the analyst's
    budget and spends; ``left_*`` is then what the analyst can still spend, the smaller of
    their own budget's rest and the dataset's rest (``dataset_left_*``).
    """

    dataset: str
    analyst: str | None
    epsilon: Fraction
    delta: Fraction
    spent_epsilon: Fraction
    spent_delta: Fraction
    left_epsilon: Fraction
    left_delta: Fraction
    dataset_left_epsilon: Fraction
    dataset_left_delta: Fraction
    spends: tuple[SpendEntry, ...]


@dataclass(frozen=True)
class ReleaseSummary:
    """A stored release: its id, who made it, when, and one line on what it holds."""

    id: str
    analyst: str
    at: float
    summary: str


def check_dataset(name: object) -> str:
    """A dataset name, [A-Za-z0-9_.-]{1,64}, else an error naming --dataset."""
    if not isinstance(name, str) or _DATASET.fullmatch(name) is None:
        raise CuratorError(
            f"--dataset: a dataset name is 1-64 letters, digits, '_', '.' or '-', got {name!r}"
        )
    return name


def check_analyst(name: object, *, custodian: bool = False) -> str:
    """An analyst name, [A-Za-z0-9_.@-]{1,64}; ``custodian`` admits the reserved name."""
    if not isinstance(name, str) or _ANALYST.fullmatch(name) is None:
        raise CuratorError(
            f"--analyst: an analyst name is 1-64 letters, digits, '_', '.', '@' or '-', "
            f"got {name!r}"
        )
    if name == CUSTODIAN and not custodian:
        raise CuratorError(
            f"--analyst: {CUSTODIAN!r} is reserved for the custodian's own queries "
            "(it has no token); choose another name"
        )
    return name


def exact(value: object, name: str, *, positive: bool) -> Fraction:
    """``value`` as an exact Fraction >= 0 (> 0 if ``positive``), else an error naming it.

    A float is the decimal it is written as (0.1 is 1/10, as ``exact_epsilon``); a string
    is a decimal or ``p/q``; a Fraction or int is taken as is.
    """
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError
            result = Fraction(repr(value))
        elif isinstance(value, Fraction | int | str):
            result = Fraction(value)
        else:
            raise TypeError
    except (TypeError, ValueError, ZeroDivisionError):
        raise CuratorError(f"{name} must be a finite number, got {value!r}") from None
    if result < 0 or (positive and result == 0):
        bound = "> 0" if positive else ">= 0"
        raise CuratorError(f"{name} must be {bound}, got {shown(result)}")
    return result


def shown(value: Fraction) -> str:
    """A Fraction for messages: its exact decimal when it has one (1/10 -> 0.1), else p/q."""
    denominator = value.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator
    sign = "-" if value < 0 else ""
    whole, rest = divmod(scaled, 10**places)
    if places == 0:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{rest:0{places}d}".rstrip("0").rstrip(".")


def to_text(value: Fraction) -> str:
    """How the database stores an exact value: ``"p/q"`` (always with the slash)."""
    return f"{value.numerator}/{value.denominator}"


def from_text(text: str) -> Fraction:
    """A stored ``"p/q"`` back as a Fraction."""
    return Fraction(text)


def new_token() -> str:
    """A fresh analyst token: the prefix and 32 random bytes from the OS CSPRNG, base64url."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    """The SHA-256 of a token, which is all the ledger stores of it."""
    return hashlib.sha256(token.encode("utf-8")).digest()
