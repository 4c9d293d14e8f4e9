"""Memoized reports: the same answer to the same question always resends the same report."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from deniable.client._answer import Answer
from deniable.client._files import atomic_write, load_document, unreadable, write_document
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "KEY_NAME",
    "MEMO_NAME",
    "SECRET_BYTES",
    "Memo",
    "load_memo",
    "load_secret",
    "memo_key",
    "save_memo",
]

MEMO_NAME = "memo.json"
KEY_NAME = "memo.key"
SECRET_BYTES = 32
_FORMAT = "deniable-memo"
_VERSION = 1
_HEX_KEY = re.compile(r"[0-9a-f]{64}")


def _answer_form(answer: Answer) -> dict[str, Any]:
    """The true answer, typed and exact (a float by its hex form), for the HMAC input only."""
    if isinstance(answer, bool):
        return {"bit": answer}
    if isinstance(answer, int):
        return {"option": answer}
    return {"number": float(answer).hex()}


def memo_key(
    secret: bytes, aggregator: str, survey_id: str, question: pb.Question, answer: Answer
) -> str:
    """HMAC-SHA256, under the device's secret, of where the answer goes and the answer itself.

    The question counts by its id, its kind (options, range) and its mechanism: a question
    that changes any of them is a new question. Its text and the server's privacy figures
    do not count. Without the secret the key reveals nothing about the answer.

    Example:
        >>> q = pb.Question(id="q", binary=pb.BinaryQuestion())
        >>> memo_key(b"k" * 32, "h:1", "s", q, True) == memo_key(b"k" * 32, "h:1", "s", q, False)
        False
    """
    if len(secret) != SECRET_BYTES:
        raise ValueError(f"secret must be {SECRET_BYTES} bytes, got {len(secret)}")
    definition = pb.Question(id=question.id, mechanism=question.mechanism)
    kind = question.WhichOneof("kind")
    if kind is not None:
        getattr(definition, kind).CopyFrom(getattr(question, kind))
    message = json.dumps(
        [
            _FORMAT,
            aggregator,
            survey_id,
            base64.b64encode(definition.SerializeToString(deterministic=True)).decode("ascii"),
            _answer_form(answer),
        ],
        separators=(",", ":"),
    )
    return hmac.new(secret, message.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Memo:
    """Reports already charged to the ledger, by memo key: each is resent as it is, for free."""

    reports: Mapping[str, pb.Report] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, report in self.reports.items():
            if not _HEX_KEY.fullmatch(key):
                raise ValueError(f"memo key must be 64 lowercase hex digits, got {key!r}")
            if not (report.report_id and report.survey_id and report.question_id):
                raise ValueError(f"report {key[:12]}...: missing report_id, survey or question")
        object.__setattr__(self, "reports", dict(self.reports))

    def get(self, key: str) -> pb.Report | None:
        """A copy of the memoized report for ``key``, if any."""
        report = self.reports.get(key)
        return None if report is None else pb.Report.FromString(report.SerializeToString())

    def add(self, entries: Mapping[str, pb.Report]) -> Memo:
        """A memo with ``entries`` added; an existing key is never replaced."""
        return Memo({**entries, **self.reports})

    def to_json(self) -> dict[str, Any]:
        """The file's document: each report as base64 of its protobuf bytes (no true answer)."""
        entries = {
            key: base64.b64encode(report.SerializeToString(deterministic=True)).decode("ascii")
            for key, report in self.reports.items()
        }
        return {"format": _FORMAT, "version": _VERSION, "reports": entries}

    @classmethod
    def from_json(cls, document: Any) -> Memo:
        """Parse and validate a memo document.

        Raises:
            ValueError: naming the first bad entry.
        """
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise ValueError(f"format must be {_FORMAT!r}")
        if document.get("version") != _VERSION:
            raise ValueError(f"version must be {_VERSION}, got {document.get('version')!r}")
        entries = document.get("reports")
        if not isinstance(entries, dict):
            raise ValueError(f"reports must be an object, got {entries!r}")
        reports = {}
        for key, encoded in entries.items():
            try:
                reports[key] = pb.Report.FromString(base64.b64decode(encoded, validate=True))
            except (TypeError, binascii.Error, DecodeError):
                raise ValueError(f"reports[{key!r}] is not a base64-encoded report") from None
        return cls(reports)


def load_memo(path: Path) -> Memo:
    """The memo in ``path``; an empty one when the file does not exist yet.

    Raises:
        LocalStateError: the file is unreadable or not a valid memo (fail closed).
    """
    return load_document(path, Memo.from_json, Memo(), "memo")


def save_memo(path: Path, memo: Memo) -> None:
    """Write the memo atomically (temporary file, fsync, rename, fsync the directory)."""
    write_document(path, memo.to_json())


def load_secret(path: Path, *, create: bool) -> bytes | None:
    """The device's memo secret: 32 random bytes in a file of mode 0600.

    When the file does not exist, it is created from :mod:`secrets` if ``create`` is true
    (the caller holds the lock), else None is returned.

    Raises:
        LocalStateError: the file exists but is unreadable or has the wrong length.
    """
    try:
        secret = path.read_bytes()
    except FileNotFoundError:
        if not create:
            return None
        secret = secrets.token_bytes(SECRET_BYTES)
        atomic_write(path, secret)  # mode 0600; never a partly written secret
        return secret
    except OSError as error:
        raise unreadable(path, f"cannot be read ({error.strerror})") from None
    if len(secret) != SECRET_BYTES:
        raise unreadable(path, f"holds {len(secret)} bytes, not a {SECRET_BYTES}-byte secret")
    return secret
