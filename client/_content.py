"""A question recognised by its content, so that asking it again anywhere gets its kept report."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from google.protobuf.json_format import MessageToDict

from deniable.client._answer import new_report_id
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["content_of", "copy_report", "normalized_text", "repeats"]

_SKIPPED = frozenset({"id", "privacy"})  # ids name, they do not ask; privacy is the server's


def normalized_text(text: str) -> str:
    """Text as compared: Unicode NFKC, case folded, runs of white space made one space.

    Example:
        >>> normalized_text("  Did you\\tCHEAT?\\n") == normalized_text("did you cheat?")
        True
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items() if k not in _SKIPPED}
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    if isinstance(value, str):
        return normalized_text(value)
    return value


def content_of(question: pb.Question) -> str:
    """What the question asks, whoever asks it: a SHA-256 of its normalized content.

    The content is the question's text, its kind with the options, range or parts (their
    texts included), and its mechanism with every parameter; every text normalized by
    :func:`normalized_text`. Ids (the question's, its parts') and the server's privacy
    figures do not count, nor do the survey and the aggregator: the same question asked in
    another survey, at another aggregator or under another name of one has the same
    content, and gets the report kept for it. Any other change (a word, an option, a
    parameter) makes a new question, drawn afresh and charged as one.

    Example:
        >>> a = pb.Question(id="q1", text="Did you cheat?", binary=pb.BinaryQuestion())
        >>> b = pb.Question(id="other", text="did  you cheat?", binary=pb.BinaryQuestion())
        >>> content_of(a) == content_of(b), content_of(a) == content_of(pb.Question(text="No?"))
        (True, False)
    """
    document = _normalized(MessageToDict(question, preserving_proto_field_name=True))
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def copy_report(
    kept: pb.Report, survey_id: str, question: pb.Question, rng: np.random.Generator | None = None
) -> pb.Report:
    """The kept report's randomized value, sent for ``question`` of survey ``survey_id``.

    The same survey and question (asked under another name of its aggregator) get the very
    same report, which the aggregator then stores once. Another survey or aggregator gets
    the same value under a fresh report id: no new draw, so nothing new to average.
    """
    report = pb.Report()
    report.CopyFrom(kept)
    if (kept.survey_id, kept.question_id) != (survey_id, question.id):
        report.report_id = new_report_id(rng)
        report.survey_id = survey_id
        report.question_id = question.id
    report.mechanism.CopyFrom(question.mechanism)
    return report


def repeats(questions: Sequence[pb.Question]) -> dict[str, str]:
    """Questions of one survey asking what an earlier one asks: their id to the first's.

    They send the first one's report value (under their own id): two draws of one answer
    could be averaged.
    """
    first: dict[str, str] = {}
    found = {}
    for question in questions:
        content = content_of(question)
        if content in first:
            found[question.id] = first[content]
        else:
            first[content] = question.id
    return found
