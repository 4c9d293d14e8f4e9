"""The memo: each question's randomized report, drawn once and kept, so it is never re-rolled."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from deniable.client._files import load_document, write_document
from deniable.client._ledger import Ledger
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MEMO_NAME", "Kept", "Memo", "definition_of", "load_memo", "save_memo"]

MEMO_NAME = "memo.json"
_FORMAT = "deniable-memo"
_VERSION = 3
_FIELDS_V2 = ("aggregator", "report", "definition", "drawn_at", "sent_at")
_FIELDS = (*_FIELDS_V2, "content", "draw")

Key = tuple[str, str, str]
"""(aggregator, survey id, question id): one kept report each."""


def definition_of(question: pb.Question) -> str:
    """What makes a question the same question: its id, kind (options, range) and mechanism.

    Base64 of the deterministic bytes of those fields; the text and the server's privacy
    figures do not count.
    """
    definition = pb.Question(id=question.id, mechanism=question.mechanism)
    kind = question.WhichOneof("kind")
    if kind is not None:
        getattr(definition, kind).CopyFrom(getattr(question, kind))
    return base64.b64encode(definition.SerializeToString(deterministic=True)).decode("ascii")


def _encode(report: pb.Report) -> str:
    return base64.b64encode(report.SerializeToString(deterministic=True)).decode("ascii")


def _decode(encoded: object, where: str) -> pb.Report:
    try:
        if not isinstance(encoded, str):
            raise TypeError
        return pb.Report.FromString(base64.b64decode(encoded, validate=True))
    except (TypeError, binascii.Error, DecodeError):
        raise ValueError(f"{where} is not a base64-encoded report") from None


@dataclass(frozen=True)
class Kept:
    """The one report drawn for a question at an aggregator, when, and whether it was stored.

    ``definition`` is :func:`definition_of` the question when the report was drawn (None
    for reports kept by version 1 of the memo, which did not record it). ``sent_at`` is
    when the aggregator acknowledged the report (None: not yet, or not known).
    ``content`` is :func:`~._content.content_of` the question (None for reports kept by
    versions 1 and 2): the same question asked anywhere else gets this report's value.
    ``draw`` is the report id the value was first drawn under, when this report is such a
    copy (None: drawn for this report).
    """

    aggregator: str
    report: pb.Report
    definition: str | None
    drawn_at: str
    sent_at: str | None = None
    content: str | None = None
    draw: str | None = None

    def __post_init__(self) -> None:
        report = self.report
        if not (report.report_id and report.survey_id and report.question_id):
            raise ValueError("report: missing report_id, survey or question")
        for name in ("aggregator", "drawn_at"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string")
        for name in ("definition", "sent_at", "content", "draw"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be null or a non-empty string, got {value!r}")

    @property
    def drawn(self) -> str:
        """The draw this report carries: the report id its value was first drawn under."""
        return self.draw or self.report.report_id

    @property
    def key(self) -> Key:
        """(aggregator, survey id, question id)."""
        return (self.aggregator, self.report.survey_id, self.report.question_id)

    def fits(self, question: pb.Question) -> bool:
        """Whether ``question`` is still the question this report was drawn for."""
        if self.report.mechanism != question.mechanism:
            return False
        return self.definition is None or self.definition == definition_of(question)

    def to_json(self) -> dict[str, Any]:
        """The entry as stored: the report as base64 of its protobuf bytes (no true answer)."""
        return {
            "aggregator": self.aggregator,
            "report": _encode(self.report),
            "definition": self.definition,
            "drawn_at": self.drawn_at,
            "sent_at": self.sent_at,
            "content": self.content,
            "draw": self.draw,
        }


@dataclass(frozen=True)
class Memo:
    """The kept reports, at most one per (aggregator, survey, question); never replaced.

    :meth:`twin` finds a kept report by its question's content, wherever it was asked.
    """

    entries: Mapping[Key, Kept] = field(default_factory=dict)
    _by_content: dict[str, Kept] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        for key, kept in self.entries.items():
            if key != kept.key:
                raise ValueError(f"entry {key!r} holds the report of {kept.key!r}")
            if kept.content is not None:  # the earliest drawn keeps the content
                first = self._by_content.get(kept.content)
                if first is None or (kept.drawn_at, kept.key) < (first.drawn_at, first.key):
                    self._by_content[kept.content] = kept
        object.__setattr__(self, "entries", dict(self.entries))

    def twin(self, content: str) -> Kept | None:
        """The earliest report kept for a question with this content, anywhere (a copy)."""
        kept = self._by_content.get(content)
        if kept is None:
            return None
        return replace(kept, report=pb.Report.FromString(kept.report.SerializeToString()))

    def get(self, aggregator: str, survey_id: str, question_id: str) -> Kept | None:
        """The kept report of a question, with a copy of its report, if any."""
        kept = self.entries.get((aggregator, survey_id, question_id))
        if kept is None:
            return None
        return replace(kept, report=pb.Report.FromString(kept.report.SerializeToString()))

    def add(self, entries: Iterable[Kept]) -> Memo:
        """A memo with ``entries`` added; a question that has a kept report keeps it."""
        return Memo({**{kept.key: kept for kept in entries}, **self.entries})

    def mark_sent(self, keys: Iterable[Key], at: str) -> Memo:
        """A memo where the reports of ``keys`` are acknowledged at ``at`` (if not before)."""
        entries = dict(self.entries)
        for key in keys:
            kept = entries.get(key)
            if kept is not None and kept.sent_at is None:
                entries[key] = replace(kept, sent_at=at)
        return Memo(entries)

    def to_json(self) -> dict[str, Any]:
        """The file's document."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "reports": [kept.to_json() for kept in self.entries.values()],
        }

    @classmethod
    def from_json(cls, document: Any, ledger: Ledger | None = None) -> Memo:
        """Parse and validate a memo document; a version 1 memo is converted with ``ledger``.

        Raises:
            ValueError: naming the first bad entry.
        """
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise ValueError(f"format must be {_FORMAT!r}")
        version = document.get("version")
        if version == 1:
            return cls._from_version_1(document, ledger or Ledger())
        if version not in (2, _VERSION):
            raise ValueError(f"version must be {_VERSION} (or 1 or 2), got {version!r}")
        fields = set(_FIELDS if version == _VERSION else _FIELDS_V2)
        entries = document.get("reports")
        if not isinstance(entries, list):
            raise ValueError(f"reports must be a list, got {entries!r}")
        kept: dict[Key, Kept] = {}
        for index, entry in enumerate(entries):
            where = f"reports[{index}]"
            if not isinstance(entry, dict) or set(entry) != fields:
                raise ValueError(f"{where} must have the keys {sorted(fields)}")
            try:
                item = Kept(**{**entry, "report": _decode(entry["report"], "report")})
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            if item.key in kept:
                raise ValueError(f"{where}: a second report for question {item.key!r}")
            kept[item.key] = item
        return cls(kept)

    @classmethod
    def _from_version_1(cls, document: dict[str, Any], ledger: Ledger) -> Memo:
        """Version 1 kept a report per *answer*; keep each question's most recently charged.

        Version 1 recorded no aggregator with a report: the ledger's charge of the same
        report id gives it (every report was charged before it was kept). Whether it was
        stored is not known: the next answer resends it, which is free and counted once.
        """
        entries = document.get("reports")
        if not isinstance(entries, dict):
            raise ValueError(f"reports must be an object, got {entries!r}")
        charges = {charge.report_id: charge for charge in ledger.charges}
        order = {charge.report_id: index for index, charge in enumerate(ledger.charges)}
        reports = [_decode(encoded, f"reports[{key!r}]") for key, encoded in entries.items()]
        latest: dict[Key, Kept] = {}
        for report in sorted(reports, key=lambda r: order.get(r.report_id, -1)):
            charge = charges.get(report.report_id)
            if charge is None:
                raise ValueError(f"report {report.report_id!r} has no charge in the ledger")
            kept = Kept(charge.aggregator, report, None, charge.at)
            latest[kept.key] = kept
        return cls(latest)


def load_memo(path: Path, ledger: Ledger | None = None) -> Memo:
    """The memo in ``path``; an empty one when the file does not exist yet.

    A version 1 memo is read with the help of ``ledger`` (see :meth:`Memo.from_json`).

    Raises:
        LocalStateError: the file is unreadable or not a valid memo (fail closed).
    """
    return load_document(path, lambda doc: Memo.from_json(doc, ledger), Memo(), "memo")


def save_memo(path: Path, memo: Memo) -> None:
    """Write the memo atomically (temporary file, fsync, rename, fsync the directory)."""
    write_document(path, memo.to_json())
