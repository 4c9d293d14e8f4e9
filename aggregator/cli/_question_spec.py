"""The question ``plan`` and ``simulate`` work on: a survey spec's entry, from a file or options."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from deniable.aggregator.analysis.simulation import parse_options
from deniable.aggregator.cli._joint import PART_HELP, part_spec
from deniable.aggregator.questions import QuestionAnalysis, analysis_for
from deniable.shared.questions import question_from_spec, question_type, question_types

__all__ = ["QuestionInputs", "question_options", "reject_options"]

F = TypeVar("F", bound=Callable[..., Any])

# Each option that describes the question, and the spec keys it fills (the first the type has).
SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "options": ("options", "items"),
    "lo": ("min",),
    "hi": ("max",),
    "parts": ("parts",),
    "mechanism": ("mechanism",),
    "epsilon": ("epsilon",),
    "alpha": ("alpha",),
}
HINTS = {"options": " (a number K or comma-separated names)", "parts": " (e.g. --part a --part b)"}


def question_options(function: F) -> F:
    """Add the options that give the question: ``--spec`` (and ``--question``), or ``--type``.

    ``--type`` comes with ``--options``, ``--mechanism``, ``--min``, ``--max`` and ``--part``.
    """
    options = [
        click.option(
            "--spec",
            "spec_file",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            help="The question as a survey spec writes it (JSON): one question's entry, or a "
            "whole spec with --question picking one (the same file `survey create` takes). "
            "Instead of --type and the options that describe the question.",
        ),
        click.option(
            "--question",
            "spec_question",
            metavar="ID",
            help="With --spec: the id of the spec's question (needed when it has several).",
        ),
        click.option(
            "--type",
            "question_type",
            default="binary",
            show_default=True,
            metavar="TYPE",
            help="Question type (" + ", ".join(question_types()) + "): yes/no, one of k "
            "options, a number on [--min, --max], a joint question of --part parts answered "
            "in one report, or any set of k items.",
        ),
        click.option(
            "--options",
            "options",
            help="categorical: the number of options K, or comma-separated option names; "
            "multi_select: the items, likewise.",
        ),
        click.option(
            "--mechanism",
            help="The mechanism, by name (default auto: the least worst-case variance); "
            "any registered for the type, e.g. categorical: grr|oue|olh; numeric: "
            "laplace|duchi|piecewise|hybrid; multi_select: item_rr.",
        ),
        click.option("--min", "lo", type=float, help="numeric: lower end of the range."),
        click.option("--max", "hi", type=float, help="numeric: upper end of the range."),
        click.option("--part", "parts", multiple=True, metavar="PART", help=PART_HELP),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _given(name: str) -> bool:
    source = click.get_current_context().get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def reject_options(what: str, names: Sequence[str]) -> None:
    """Raise a usage error for the first option in ``names`` given for ``what``.

    An option counts as given when it came from the command line or the environment.
    """
    context = click.get_current_context()
    for param in context.command.params:
        if param.name in names and _given(str(param.name)):
            raise click.UsageError(f"{param.opts[0]} does not apply to {what}")


class QuestionInputs:
    """The question the options (or ``--spec``) describe, its mechanism and its analysis."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        spec_file: Path | None = values.get("spec_file")
        if spec_file is None:
            if values.get("spec_question") is not None:
                raise click.UsageError("--question needs --spec")
            self.kind = str(values["question_type"])
            if self.kind not in question_types():
                raise click.UsageError(
                    f"--type: expected one of {', '.join(question_types())}, got {self.kind!r}"
                )
            self.item = self._item_from_options(values)
            where = f"--type {self.kind}"
        else:
            described = ["question_type", *SPEC_KEYS]
            reject_options("--spec (the spec describes the question)", described)
            self.item = _item_from_file(spec_file, values.get("spec_question"))
            self.kind = str(self.item.get("type", "binary"))
            where = "--spec"
        try:
            self.question, self.mechanism = question_from_spec(
                self.item, where, survey_limits=False
            )
        except ValueError as error:
            raise click.UsageError(str(error)) from None
        self.analysis: QuestionAnalysis = analysis_for(self.question)

    def _item_from_options(self, values: Mapping[str, Any]) -> dict[str, Any]:
        qtype = question_type(self.kind)
        item: dict[str, Any] = {"id": "simulated", "text": "Simulated question", "type": self.kind}
        missing: list[str] = []
        for name, keys in SPEC_KEYS.items():
            key = next((key for key in keys if key in qtype.spec_keys), None)
            value = values.get(name)
            given = value not in (None, ())
            if key is None:
                if given:
                    flag = "--part" if name == "parts" else _flag(name)
                    raise click.UsageError(f"{flag} does not apply to --type {self.kind}")
                continue
            if value in (None, ()):
                if name not in ("mechanism", "epsilon", "alpha"):
                    missing.append(name)
                continue
            item[key] = _spec_value(name, value)
        asked = item.get("mechanism", "auto")
        names = [cls.name for cls in qtype.mechanisms()]
        if asked not in ("auto", *names):
            raise click.UsageError(
                f"--mechanism {asked} does not apply to --type {self.kind} (expected one of: "
                + ", ".join(["auto", *names])
                + ")"
            )
        if missing:
            flags = " and ".join(_flag(name) for name in missing)
            raise click.UsageError(f"--type {self.kind} needs {flags}{HINTS.get(missing[0], '')}")
        if "epsilon" in item and "alpha" in item:
            raise click.UsageError("give exactly one of --alpha or --epsilon")
        if "epsilon" not in item and "alpha" not in item:
            if "alpha" in qtype.spec_keys:
                raise click.UsageError("give exactly one of --alpha or --epsilon")
            raise click.UsageError(f"--type {self.kind} needs --epsilon")
        return item

    def reject_inputs(self, allowed: frozenset[str], names: Sequence[str], what: str) -> None:
        """Refuse an option of ``names`` (``share``, ``distribution``) the type does not use."""
        reject_options(f"--type {self.kind}{what}", [n for n in names if n not in allowed])


def _flag(name: str) -> str:
    return {"lo": "--min", "hi": "--max", "parts": "--part", "share": "--p"}.get(
        name, "--" + name.replace("_", "-")
    )


def _spec_value(name: str, value: Any) -> Any:
    if name == "options":
        try:
            return list(parse_options(str(value)))
        except ValueError as error:
            raise click.UsageError(f"--options: {error}") from None
    if name == "parts":
        return [part_spec(part) for part in value]
    return value


def _item_from_file(path: Path, question_id: str | None) -> dict[str, Any]:
    try:
        spec = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise click.UsageError(f"--spec {path}: {error}") from None
    if isinstance(spec, dict) and "questions" in spec:
        items = spec["questions"]
        if not isinstance(items, list) or not items:
            raise click.UsageError(f"--spec {path}: 'questions' must be a non-empty list")
        ids = [item.get("id") if isinstance(item, dict) else None for item in items]
        if question_id is None:
            if len(items) > 1:
                raise click.UsageError(f"--spec {path} has {len(items)} questions: give --question")
            chosen = items[0]
        elif question_id in ids:
            chosen = items[ids.index(question_id)]
        else:
            raise click.UsageError(f"--spec {path} has no question {question_id!r} (has: {ids})")
    elif question_id is not None:
        raise click.UsageError("--question applies to a survey spec (one with 'questions')")
    else:
        chosen = spec
    if not isinstance(chosen, dict):
        raise click.UsageError(f"--spec {path}: a question must be a JSON object")
    return {"id": "simulated", "text": "Simulated question", **chosen}
