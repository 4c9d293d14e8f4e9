"""The privacy ledger: every ε this device has spent, device-wide and per aggregator and survey."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.client._files import load_document, write_document
from deniable.shared.transport import parse_target

__all__ = ["LEDGER_NAME", "Charge", "Ledger", "aggregator_name", "load_ledger", "save_ledger"]

LEDGER_NAME = "ledger.json"
_FORMAT = "deniable-ledger"
_VERSION = 2
_FIELDS_V1 = ("question_id", "mechanism", "epsilon", "report_id", "at")
_FIELDS = (*_FIELDS_V1, "draw")


def aggregator_name(target: str) -> str:
    """The ledger's name for an aggregator: its target, normalized (one name per aggregator).

    Host names are lowercased without a trailing dot, IP addresses written canonically and
    the port without leading zeros; ``dns:///HOST:PORT`` is named ``HOST:PORT``, and a
    list of daemons (``ipv4:A:P,B:P``) by its sorted addresses joined with commas. Names
    are not resolved: ``localhost:50051`` and ``127.0.0.1:50051`` are two aggregators to
    the ledger, and so are a list and one of its addresses alone. The budget is device-wide
    (:meth:`Ledger.total`), so a second name for one aggregator gains it nothing.

    Raises:
        ValueError: the target is none of the accepted forms (the message names it).

    Example:
        >>> aggregator_name("LocalHost.:050051"), aggregator_name("[0:0::1]:7")
        ('localhost:50051', '[::1]:7')
        >>> aggregator_name("ipv4:127.0.0.1:5002,127.0.0.1:5001")
        '127.0.0.1:5001,127.0.0.1:5002'
    """
    return parse_target(target).name


@dataclass(frozen=True)
class Charge:
    """One report's privacy loss at an aggregator, as recorded before the report is sent.

    ``draw`` names the randomized draw the report carries: the report id it was first
    drawn under (its own id unless it is a copy of a report kept for the same question
    asked elsewhere, see :mod:`._content`). A draw costs its ε once on this device however
    many aggregators receive it, and once at each aggregator that does.
    """

    aggregator: str
    survey_id: str
    question_id: str
    mechanism: str
    epsilon: float
    report_id: str
    at: str  # UTC time of the charge, ISO 8601
    draw: str = ""  # "": the report's own draw (its report id)

    def __post_init__(self) -> None:
        if self.draw == "":
            object.__setattr__(self, "draw", self.report_id)
        names = ("aggregator", "survey_id", "question_id", "mechanism", "report_id", "at", "draw")
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        epsilon = self.epsilon
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
            raise ValueError(f"epsilon must be a number, got {epsilon!r}")
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
        object.__setattr__(self, "epsilon", float(epsilon))

    def to_json(self) -> dict[str, Any]:
        """The charge as stored under its aggregator and survey."""
        return {name: getattr(self, name) for name in _FIELDS}


@dataclass(frozen=True)
class Ledger:
    """All charges, oldest first. ε adds up over distinct draws (sequential composition).

    A draw sent to several aggregators (or under several names of one) is one release of
    the participant's answer: it counts once in :meth:`total`, and once in :meth:`spent`
    at each aggregator that received it.

    Example:
        >>> ledger = Ledger().add([Charge("h:1", "s", "q", "grr", 1.5, "r1", "t")])
        >>> ledger = ledger.add([Charge("h:2", "s", "q", "grr", 1.5, "r2", "t", draw="r1")])
        >>> ledger.spent("h:1"), ledger.spent("h:2"), ledger.spent("h:3"), ledger.total()
        (1.5, 1.5, 0.0, 1.5)
    """

    charges: tuple[Charge, ...] = ()

    def add(self, charges: Iterable[Charge]) -> Ledger:
        """A ledger with ``charges`` appended."""
        return Ledger((*self.charges, *charges))

    def aggregators(self) -> list[str]:
        """The aggregators charged so far, in order of first charge."""
        return list(dict.fromkeys(charge.aggregator for charge in self.charges))

    def of(self, aggregator: str, survey_id: str | None = None) -> list[Charge]:
        """The charges for one aggregator (and survey)."""
        return [
            charge
            for charge in self.charges
            if charge.aggregator == aggregator and survey_id in (None, charge.survey_id)
        ]

    def spent(self, aggregator: str, survey_id: str | None = None) -> float:
        """ε spent at an aggregator (or on one of its surveys): each draw once, summed exactly."""
        return _once_per_draw(self.of(aggregator, survey_id))

    def total(self) -> float:
        """ε spent on this device over every aggregator: each draw once, summed exactly."""
        return _once_per_draw(self.charges)

    def draws(self, aggregator: str | None = None) -> set[str]:
        """The draws charged (at one aggregator, or anywhere on this device)."""
        return {c.draw for c in self.charges if aggregator in (None, c.aggregator)}

    def surveys(self, aggregator: str) -> list[str]:
        """The surveys charged at an aggregator, in order of first charge."""
        return list(dict.fromkeys(charge.survey_id for charge in self.of(aggregator)))

    def to_json(self) -> dict[str, Any]:
        """The file's document: charges nested by aggregator, then survey."""
        nested: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for charge in self.charges:
            surveys = nested.setdefault(charge.aggregator, {})
            surveys.setdefault(charge.survey_id, []).append(charge.to_json())
        return {"format": _FORMAT, "version": _VERSION, "aggregators": nested}

    @classmethod
    def from_json(cls, document: Any) -> Ledger:
        """Parse and validate a ledger document.

        Raises:
            ValueError: naming the first bad field by its path in the document.
        """
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise ValueError(f"format must be {_FORMAT!r}")
        version = document.get("version")
        if version not in (1, _VERSION):
            raise ValueError(f"version must be {_VERSION} (or 1), got {version!r}")
        fields = set(_FIELDS if version == _VERSION else _FIELDS_V1)
        aggregators = document.get("aggregators")
        if not isinstance(aggregators, dict):
            raise ValueError(f"aggregators must be an object, got {aggregators!r}")
        charges = []
        for aggregator, surveys in aggregators.items():
            if not isinstance(surveys, dict):
                raise ValueError(f"aggregators[{aggregator!r}] must be an object")
            for survey_id, entries in surveys.items():
                where = f"aggregators[{aggregator!r}][{survey_id!r}]"
                if not isinstance(entries, list):
                    raise ValueError(f"{where} must be a list")
                for index, entry in enumerate(entries):
                    if not isinstance(entry, dict) or set(entry) != fields:
                        raise ValueError(f"{where}[{index}] must have the keys {sorted(fields)}")
                    try:
                        charges.append(Charge(aggregator, survey_id, **entry))
                    except ValueError as error:
                        raise ValueError(f"{where}[{index}]: {error}") from None
        return cls(tuple(charges))


def _once_per_draw(charges: Iterable[Charge]) -> float:
    """The ε of the charges' distinct draws, summed exactly (a draw's largest charge)."""
    by_draw: dict[str, float] = {}
    for charge in charges:
        by_draw[charge.draw] = max(by_draw.get(charge.draw, 0.0), charge.epsilon)
    return math.fsum(by_draw.values())


def load_ledger(path: Path) -> Ledger:
    """The ledger in ``path``; an empty one when the file does not exist yet.

    Raises:
        LocalStateError: the file is unreadable or not a valid ledger (fail closed).
    """
    return load_document(path, Ledger.from_json, Ledger(), "ledger")


def save_ledger(path: Path, ledger: Ledger) -> None:
    """Write the ledger atomically (temporary file, fsync, rename, fsync the directory)."""
    write_document(path, ledger.to_json())
