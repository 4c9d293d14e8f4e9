"""A survey spec (JSON): its questions, options and limits, as ``survey create`` reads it."""

from __future__ import annotations

import codecs
from typing import Any

import click

from deniable.aggregator.cli._common import fail
from deniable.client import DEFAULT_MAX_EPSILON
from deniable.shared.mechanisms import mechanism_of
from deniable.shared.privacy import MAX_RELEASE_STEP
from deniable.shared.questions import MIN_SURVEY_EPSILON, question_from_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "MAX_MIN_REPORTS",
    "MAX_REPORTS",
    "SURVEY_KEYS",
    "count_from_spec",
    "epsilon_warnings",
    "questions_from_spec",
    "release_step_from_spec",
    "spec_text",
    "survey_options_from_spec",
]

SURVEY_KEYS = {
    "title", "questions", "min_reports", "enrollment_required", "release_step", "max_reports"
}  # fmt: skip
MAX_MIN_REPORTS = 10**9  # as the daemon checks (deniable.aggregator.server._enrollment)
MAX_REPORTS = 10**15  # Survey.max_reports, as the daemon checks (storage._survey_cap)


def spec_text(data: bytes, name: str) -> str:
    """The spec's text: UTF-8 (a leading byte-order mark is allowed); else exit code 2."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        utf16 = data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
        hint = "; it looks like UTF-16: save it as UTF-8" if utf16 else ""
        fail(
            f"{name}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
            f"{hint}",
            2,
        )


def questions_from_spec(spec: object) -> tuple[str, list[pb.Question]]:
    """Parse a survey spec: a title and questions (see ``survey create --help``)."""
    if not isinstance(spec, dict):
        raise click.UsageError("the spec must be a JSON object with 'title' and 'questions'")
    unknown = set(spec) - SURVEY_KEYS
    if unknown:
        raise click.UsageError(f"spec: unknown keys {sorted(unknown)}")
    title, items = spec.get("title"), spec.get("questions")
    if not isinstance(title, str) or not title.strip():
        raise click.UsageError("spec.title: a non-empty string is required")
    if not isinstance(items, list) or not items:
        raise click.UsageError("spec.questions: a non-empty list is required")
    return title, [_question(item, f"spec.questions[{i}]") for i, item in enumerate(items)]


def epsilon_warnings(questions: list[pb.Question]) -> list[str]:
    """One warning per question whose exact ε is above the participants' default limit."""
    return [
        f"spec.questions[{index}] ({question.id!r}) has epsilon {epsilon:.6g}, above the "
        f"participants' default limit of {DEFAULT_MAX_EPSILON!r}: every participant who keeps "
        "that default (deniable answer --max-epsilon) refuses this survey; use epsilon <= "
        f"{DEFAULT_MAX_EPSILON!r}, or ask participants to raise their limit"
        for index, question in enumerate(questions)
        if (epsilon := mechanism_of(question).epsilon) > DEFAULT_MAX_EPSILON
    ]


def survey_options_from_spec(spec: dict[str, Any]) -> tuple[int, bool]:
    """The spec's optional ``min_reports`` (default 0) and ``enrollment_required`` (false)."""
    minimum = spec.get("min_reports", 0)
    if type(minimum) is not int or not 0 <= minimum <= MAX_MIN_REPORTS:
        raise click.UsageError(
            f"spec.min_reports: a whole number 0..{MAX_MIN_REPORTS:,} is required, got {minimum!r}"
        )
    enrollment = spec.get("enrollment_required", False)
    if not isinstance(enrollment, bool):
        raise click.UsageError(f"spec.enrollment_required: true or false, got {enrollment!r}")
    return minimum, enrollment


def release_step_from_spec(spec: dict[str, Any], option: int | None) -> int:
    """The release step: ``--release-step``, else the spec's ``release_step``, else 0."""
    return count_from_spec(spec, "release_step", option, MAX_RELEASE_STEP, "not stepped")


def count_from_spec(
    spec: dict[str, Any], key: str, option: int | None, maximum: int, zero: str
) -> int:
    """``--KEY`` (with dashes), else the spec's ``key``, else 0; both only if they agree."""
    value = spec.get(key, 0)
    if type(value) is not int or not 0 <= value <= maximum:
        raise click.UsageError(
            f"spec.{key}: a whole number 0..{maximum:,} is required (0: {zero}), got {value!r}"
        )
    if option is None:
        return value
    if key in spec and value != option:
        flag = "--" + key.replace("_", "-")
        raise click.UsageError(f"{flag} {option} and spec.{key} {value} disagree; give one of them")
    return option


def _question(item: object, where: str) -> pb.Question:
    try:
        question, _ = question_from_spec(item, where)
    except ValueError as error:
        message = str(error)
        requested = item.get("epsilon") if isinstance(item, dict) else None
        if (
            "is below the minimum" in message
            and isinstance(requested, int | float)
            and requested >= MIN_SURVEY_EPSILON
        ):  # the mechanism certified at the requested ε comes out just below it
            message += (
                f"; the mechanism certified at the requested epsilon {requested!r} comes out "
                "just below it: ask for a slightly larger epsilon"
            )
        raise click.UsageError(message) from None
    return question
