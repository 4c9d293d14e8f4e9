"""Where the true answers come from: --answer, --answers-file (or standard input), prompts."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from click.core import ParameterSource

from deniable.client._answer import Answer, check_answer_syntax, parse_answers
from deniable.client._errors import InvalidAnswerError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["ANSWER_WARNING", "GivenAnswers", "answers_file_option", "stdin_is_tty"]

ANSWER_WARNING = (
    "Warning: --answer puts your true answers in your shell history and, while this runs, "
    "in this machine's process list (ps, /proc/PID/cmdline); answer at the prompts instead "
    "(leave out --answer), or with --answers-file -"
)
"""Shown on stderr when --answer is typed at a terminal (standard input a terminal)."""

answers_file_option = click.option(
    "--answers-file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    metavar="FILE",
    help="Read answers from FILE, one QID=VALUE a line as with --answer (blank lines and "
    "lines starting with # are skipped); - reads them from standard input, out of your shell "
    "history and the process list. Standard input then answers no prompt: every question "
    "needs an answer, and nothing asks to confirm.",
)


def stdin_is_tty() -> bool:
    """Whether a person can answer prompts: the default of ``--interactive``."""
    return sys.stdin.isatty()


def _read(path: Path) -> list[str]:
    """The ``QID=VALUE`` lines of an answers file (``-``: standard input)."""
    name = "standard input" if str(path) == "-" else repr(str(path))
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
        text = data.decode("utf-8")
    except OSError as error:
        raise InvalidAnswerError(f"--answers-file: cannot read {name} ({error.strerror})") from None
    except UnicodeDecodeError:
        raise InvalidAnswerError(f"--answers-file: {name} is not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@dataclass(frozen=True)
class GivenAnswers:
    """The answers given before any question is shown, and whether prompts may be used."""

    options: tuple[str, ...]
    lines: list[str]
    interactive: bool

    @classmethod
    def collect(
        cls, options: tuple[str, ...], answers_file: Path | None, interactive: bool | None
    ) -> GivenAnswers:
        """Read and check the syntax of every given answer, before the aggregator is asked.

        ``--answer`` typed at a terminal is warned about on stderr: the true answer is now
        in the shell's history and, while the command runs, in the process list. With
        ``--answers-file -`` standard input holds the answers, so nothing is prompted.

        Raises:
            InvalidAnswerError: a malformed answer, an unreadable file, or ``--interactive``
                with ``--answers-file -``.
        """
        check_answer_syntax(options)
        from_stdin = answers_file is not None and str(answers_file) == "-"
        if from_stdin and interactive:
            raise InvalidAnswerError(
                "--interactive: standard input holds the answers (--answers-file -), so it "
                "cannot answer prompts"
            )
        source = click.get_current_context().get_parameter_source("answer_options")
        if options and source is ParameterSource.COMMANDLINE and stdin_is_tty():
            click.echo(ANSWER_WARNING, err=True)
        lines = [] if answers_file is None else _read(answers_file)
        check_answer_syntax(lines, flag="--answers-file")
        if interactive is None:
            interactive = not from_stdin and stdin_is_tty()
        return cls(options, lines, interactive)

    def parse(self, questions: Sequence[pb.Question]) -> tuple[dict[str, Answer], dict[str, str]]:
        """The answers by question id, and for each where it came from (for the review).

        Raises:
            InvalidAnswerError: an unknown question, a bad value, or two different answers.
        """
        answers = parse_answers(self.options, questions)
        sources = dict.fromkeys(answers, "with --answer")
        for qid, answer in parse_answers(self.lines, questions, flag="--answers-file").items():
            if answers.setdefault(qid, answer) != answer:
                raise InvalidAnswerError(
                    f"--answers-file: conflicting answers for question {qid!r} (see --answer)"
                )
            sources.setdefault(qid, "from --answers-file")
        return answers, sources
