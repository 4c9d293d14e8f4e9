"""Every ``$`` command of README.md's console blocks runs, with the exit code and output shown."""

# The blocks run in README order against real daemons on 127.0.0.1:0, in temporary
# directories that stand for the README's (/home/you, /tmp/you, /tmp/walk3, /tmp/smoke).
# The README's addresses and survey ids are mapped to the real ones: an id is learnt when
# `survey create` prints it, and the surveys the prose only describes are made here from
# that description. Outputs are compared line by line with what varies from run to run
# masked (report ids, timestamps, randomized reported values, estimates, throughput), and
# a `[...]` or `...` line stands for any lines. A command whose output shows answers typed
# at its prompts runs on a pseudo-terminal, where those answers are typed.

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from deniable.aggregator.cli.survey._spec import questions_from_spec
from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import open_storage
from deniable.client import parse_answer
from deniable.client._answer import build_reports
from deniable.client._remote import AggregatorClient
from deniable.shared.errors import EXIT_CODES
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.client._recording import RecordingAggregator, open_survey, recording_aggregator
from tests.conftest import BIN, binary_question
from tests.e2e._forks import Runner
from tests.e2e._terminal import on_terminal

README = Path(__file__).parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")

# The README's directories, each a temporary one here. The participant's home (HOME) is
# /tmp/you under "Privacy guardrails", /tmp/walk3/home under "Enrollment" (its prose
# names /tmp/walk3 as the daemon's folder), and /home/you elsewhere.
HOMES = {"Privacy guardrails": "/tmp/you", "Enrollment": "/tmp/walk3/home"}
FOLDERS = {"Enrollment": "/tmp/walk3"}  # the working directory, else the home
DEFAULT_HOME = "/home/you"
README_DIRS = ("/home/you", "/tmp/you", "/tmp/walk3", "/tmp/smoke")

# Surveys the prose describes without a `survey create`: README id -> how to make it.
# "json:TITLE" is the README's ```json spec with that title; "cat:TITLE" a spec shown with
# `$ cat`; a dict is the spec itself (the prose says only "here epsilon = 3").
DESCRIBED: dict[str, str | dict[str, object]] = {
    "5d8ee74550959c95": "json:Study habits",
    "94f1f2ebc80394c9": "cat:Exam honesty",
    "c2b27da5c4596997": {  # other questions: the same ones would get the kept reports
        "title": "Exam honesty at work",
        "questions": [
            {
                "id": "cheated",
                "text": "Have you ever cheated in a test at work?",
                "type": "binary",
                "epsilon": 1.0,
            },
            {
                "id": "copied",
                "text": "Have you ever copied a colleague's report?",
                "type": "binary",
                "alpha": 0.5,
            },
        ],
    },
    "8517705e20dc3c83": {
        "title": "Late",
        "questions": [{"id": "late", "text": "Were you late?", "type": "binary", "epsilon": 3}],
    },
}
# The survey that only a hostile test aggregator serves (a real daemon refuses alpha = 1).
HOSTILE_ADDRESS, HOSTILE_SURVEY = "127.0.0.1:50052", "5e1f0c0ffee0b0a7"

# Answers of the simulated participants the prose adds ("after 31 participants"),
# drawn from the population it describes.
POPULATION = {"cheated": ("yes", "no"), "copied": ("yes", "no"), "os": ("iOS", "Android", "Linux")}


@dataclass
class Command:
    """One ``$`` line of a console block, the output shown under it and where it is."""

    text: str
    expected: list[str]
    section: str
    line: int
    code: int | None = None  # from a following `$ echo $?`
    prose: str = ""  # the text between the previous block and this one

    def __str__(self) -> str:
        return f"README.md:{self.line}: $ {self.text}"


def commands() -> list[Command]:
    """Every command of every console block, in README order."""
    found: list[Command] = []
    section, prose, fence, after_echo = "", "", "", False
    lines = TEXT.splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = "" if fence else line[3:] or "text"
            prose = prose if fence else ""  # the prose since the last code block ended
            continue
        if not fence:
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            prose += line + "\n"
        elif fence != "console":
            continue
        elif line.startswith("$ echo $?"):
            found[-1].code, after_echo = int(lines[number].strip()), True
        elif line.startswith("$ "):
            found.append(Command(line[2:], [], section, number, prose=prose))
            after_echo = False
        elif not after_echo:
            found[-1].expected.append(line)
    return found


def json_spec(title: str) -> str:
    """The README's ```json block with this title."""
    for spec in re.findall(r"```json\n(.*?)```", TEXT, re.S):
        if json.loads(spec)["title"] == title:
            return str(spec)
    raise AssertionError(f"no ```json spec titled {title!r} in README.md")


# --- masking: what differs from run to run, and nothing else -----------------------------

PROMPTED = re.compile(r"^(?:  Your answer .*|Send these .*\? \[y/N\]): (.*)$")
CURATED = re.compile(r"^(  (?:\w+: )?)-?[\d.]+, (\d+% interval) \[-?[\d.]+, -?[\d.]+\]")
REPORT_ROW = re.compile(r"^(  <report-id>  \S+\s+)(\S+(?: \d+)?)(\s+)(\S+\s+\d+\.\d{4})$")


def reported(value: str) -> str:
    """A randomized reported value: its kind only (yes/no, an option, a number)."""
    if value in ("yes", "no"):
        return "<yes/no>"
    if re.fullmatch(r"option \d+", value):
        return "option <n>"
    float(value)
    return "<number>"


def masked(text: str, command: str, known_ids: set[str]) -> list[str]:
    """The lines of an output with report ids, timestamps, and random figures masked."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "<report-id>", text)
    rows = [REPORT_ROW.match(line) for line in text.splitlines()]
    text = "\n".join(
        f"{row[1]}{reported(row[2])} {row[4]}" if row else line
        for row, line in zip(rows, text.splitlines(), strict=True)
    )
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", "<time>", text)
    text = re.sub(
        r"(?<![\w.])[0-9a-f]{16}(?![\w.])",
        lambda m: m[0] if m[0] in known_ids else "<survey-id>",
        text,
    )
    text = re.sub(r"[\d,]+ reports/s", "<rate> reports/s", text)
    text = re.sub(r"embedded daemon at 127\.0\.0\.1:\d+", "embedded daemon at <address>", text)
    lines = []
    for line in text.splitlines():
        if "estimate" in command.split()[:2] and not line.startswith("Error:"):
            line = re.sub(r"\s*-?\d+\.\d+", " <x>", line)  # estimates: random by design
        if command.split()[1:2] == ["curate"] and "--seed" not in command.split():
            line = CURATED.sub(r"\1<x>, \2 [<low>, <high>]", line)  # fresh Laplace noise
        lines.append(line)
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, a `[...]` or `...` line matching any number of lines."""
    if not expected:
        return not actual
    if expected[0] in ("[...]", "..."):
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


# --- the run: daemons, runner, mapping ---------------------------------------------------


@dataclass
class Walk:
    """The state of a README walk: directories, daemons and the README-to-real mappings."""

    root: Path
    runner: Runner
    stack: ExitStack
    addresses: dict[str, str] = field(default_factory=dict)  # README -> real
    surveys: dict[str, str] = field(default_factory=dict)  # README id -> real id
    catted: dict[str, str] = field(default_factory=dict)  # spec title -> text
    daemons: list[subprocess.Popen[str]] = field(default_factory=list)
    hostile: RecordingAggregator | None = None
    prose_env: dict[str, dict[str, str]] = field(default_factory=dict)  # section -> names
    postgres: Callable[[], str] | None = None  # a new database on the test server
    databases: dict[str, str] = field(default_factory=dict)  # README URL -> real

    def path(self, readme_dir: str) -> Path:
        real = self.root / readme_dir.strip("/").replace("/", "-")
        real.mkdir(parents=True, exist_ok=True)
        return real

    def to_real(self, text: str) -> str:
        for readme, real in self.databases.items():
            text = text.replace(readme, real)
        for readme, real in self.addresses.items():
            text = text.replace(readme, real)
        for readme, real in self.surveys.items():
            text = text.replace(readme, real)
        for readme_dir in sorted(README_DIRS, key=len, reverse=True):
            text = re.sub(
                re.escape(readme_dir) + r"(?=[/\s'\"]|$)", str(self.path(readme_dir)), text
            )
        return text

    def to_readme(self, text: str) -> str:
        for readme, real in self.databases.items():
            text = text.replace(real, readme)
        for readme_dir in sorted(README_DIRS, key=len, reverse=True):
            text = text.replace(str(self.path(readme_dir)), readme_dir)
        for readme, real in self.addresses.items():
            port, readme_port = real.rsplit(":", 1)[1], readme.rsplit(":", 1)[1]
            text = text.replace(real, readme).replace(f'"port": {port}', f'"port": {readme_port}')
        for readme, real in self.surveys.items():
            text = text.replace(real, readme)
        return text

    def home(self, section: str) -> str:
        return next((home for key, home in HOMES.items() if section.startswith(key)), DEFAULT_HOME)

    def cwd(self, section: str) -> Path:
        folder = next((f for key, f in FOLDERS.items() if section.startswith(key)), None)
        return self.path(folder or self.home(section))

    def env(self, section: str, program: str = "") -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DENIABLE_", "XDG_"))}
        env["HOME"] = str(self.path(self.home(section)))
        env["PYTHONUNBUFFERED"] = "1"
        if "127.0.0.1:50051" in self.addresses:
            # The default --server, 127.0.0.1:50051, stands for the daemon started as that;
            # only the program's own variable is set, as a reader's shell has neither.
            default = self.addresses["127.0.0.1:50051"]
            own = {
                "deniable": "DENIABLE_SERVER",
                "deniable-aggregator": "DENIABLE_AGGREGATOR_SERVER",
            }
            env |= {name: default for key, name in own.items() if program in ("", key)}
        env |= self.prose_env.get(section, {})
        return env

    def serve(self, words: list[str], env: dict[str, str], command: Command) -> tuple[int, str]:
        """Start a `serve` in the background on a free port; its output until it listens."""
        readme_address = "127.0.0.1:50051"
        if "--listen" in words:
            at = words.index("--listen") + 1
            readme_address, words[at] = self.to_readme(words[at]), "127.0.0.1:0"
        env = env | {"DENIABLE_AGGREGATOR_SERVE_LISTEN": "127.0.0.1:0"}
        log = self.root / f"serve-{len(self.daemons)}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                [str(BIN / words[0]), *words[1:]], stdout=out, stderr=subprocess.STDOUT,
                env=env, cwd=self.cwd(command.section), text=True,
            )  # fmt: skip
        self.daemons.append(process)
        for _ in range(600):
            found = re.search(r"^listening on (\S+)$", log.read_text(), re.M)
            if found:
                self.addresses[readme_address] = found[1]
                return 0, log.read_text()
            assert process.poll() is None, f"{command}: exited early: {log.read_text()}"
            time.sleep(0.05)
        raise AssertionError(f"{command}: not listening after 30 s: {log.read_text()}")

    def admin(self, readme_address: str) -> AggregatorClient:
        token = (self.path(DEFAULT_HOME) / ".local/share/deniable/admin-token").read_text()
        client = AggregatorClient(self.addresses[readme_address], admin_token=token.strip())
        return self.stack.enter_context(client)

    def describe(self, readme_id: str, command: Command) -> None:
        """Make a survey that the prose only describes, on the daemon the command calls."""
        if readme_id == HOSTILE_SURVEY:
            survey = open_survey(readme_id, binary_question("cheated", alpha=1.0))
            calls, address = self.stack.enter_context(recording_aggregator([survey]))
            self.addresses[HOSTILE_ADDRESS], self.hostile = address, calls
            self.surveys[readme_id] = readme_id
            return
        assert readme_id in DESCRIBED, f"{command}: survey {readme_id} was never made"
        how = DESCRIBED[readme_id]
        if isinstance(how, dict):
            spec: object = how
        elif how.startswith("json:"):
            spec = json.loads(json_spec(how[5:]))
        else:
            spec = json.loads(self.catted[how[4:]])
        title, questions = questions_from_spec(spec)
        server = re.search(r"127\.0\.0\.1:\d+", command.text)
        assert server, f"{command}: which daemon?"
        self.surveys[readme_id] = self.admin(server[0]).create_survey(title, questions).id

    def fill(self, command: Command) -> None:
        """The prose's "after N participants": the others answer through the client API."""
        wanted = re.search(r"[Aa]fter (\d+) participants", command.prose)
        if not wanted:
            return
        readme_id = command.text.split()[-1]
        client = self.admin("127.0.0.1:50051")
        survey = client.get_survey(self.surveys[readme_id])
        rng = np.random.default_rng(0)
        have = client.get_estimate(survey.id, survey.questions[0].id).n
        batch: list[pb.Report] = []
        for _ in range(int(wanted[1]) - have):
            answers = {}
            for question in survey.questions:
                if question.id in POPULATION:
                    value = str(rng.choice(POPULATION[question.id]))
                else:  # the numeric question: hours near 14 of 40
                    value = str(round(float(np.clip(rng.normal(14, 6), 0, 40)), 1))
                answers[question.id] = parse_answer(value, question)
            batch += [prepared.report for prepared in build_reports(survey, answers)]
        if batch:
            client.submit_reports(batch)

    def start_described_daemons(self, command: Command) -> None:
        """Start the `serve` commands the prose before a block names, such as --listen X."""
        for found in re.findall(r"`((?:\w+=\S+ )*deniable-aggregator serve [^`]*)`", command.prose):
            listen = re.search(r"--listen (127\.0\.0\.1:\d+)", found)
            if not listen or listen[1] in self.addresses:
                continue
            words = shlex.split(self.to_real(" ".join(found.split())))
            env = self.env(command.section)
            while "=" in words[0]:
                name, value = words.pop(0).split("=", 1)
                env[name] = value
            self.serve(words, env, command)
        for name, value in re.findall(r"`(DENIABLE_\w+)=([^`\s]+)`", command.prose):
            self.prose_env.setdefault(command.section, {})[name] = self.to_real(value)

    def cut_token_files(self, command: Command) -> None:
        """The prose's "`alice.token` and `bob.token`, one line of `tokens.txt` each"."""
        cut = re.search(
            r"\(here ((?:`\w+\.token`(?:, | and )?)+), one line of `(\S+)` each\)", command.prose
        )
        if not cut:
            return
        folder = self.cwd(command.section)
        lines = (folder / cut[2]).read_text().splitlines()
        for name, line in zip(re.findall(r"`(\w+\.token)`", cut[1]), lines, strict=False):
            if not (folder / name).exists():
                (folder / name).write_text(line + "\n")

    def smoke_databases(self) -> None:
        """The prose before `check`: a.db with 1,050 reports, b.db a copy damaged by hand."""
        folder = self.path("/tmp/smoke")
        if (folder / "a.db").exists():
            return
        running = start_server(
            open_storage(f"sqlite:///{folder / 'a.db'}"), "t" * 16, "127.0.0.1:0"
        )
        try:
            with AggregatorClient(running.address, admin_token="t" * 16, attempts=1) as client:
                survey = client.create_survey(
                    "Smoke", [binary_question("q1"), binary_question("q2")]
                )
                mechanism = survey.questions[0].mechanism

                def report(qid: str, i: int) -> pb.Report:
                    return pb.Report(
                        report_id=f"{qid}-{i}".encode().hex().rjust(32, "0"), survey_id=survey.id,
                        question_id=qid, mechanism=mechanism, bit=i % 3 != 0,
                    )  # fmt: skip

                client.submit_reports([report("q1", i) for i in range(200)])  # written twice
                client.submit_reports([report("q1", i) for i in range(200, 1025)])
                client.submit_reports([report("q2", i) for i in range(25)])
        finally:
            running.stop(grace=1.0)
        shutil.copy(folder / "a.db", folder / "b.db")
        with sqlite3.connect(folder / "b.db") as connection:
            connection.execute("UPDATE tallies SET n = n + 1 WHERE question_id = 'q1'")
            connection.execute("UPDATE tallies SET sums = '[3]' WHERE question_id = 'q2'")
            connection.execute(
                "INSERT INTO log (survey_id, reports) SELECT survey_id, reports FROM log "
                "WHERE seq = (SELECT MIN(seq) FROM log)"
            )
        connection.close()

    def run(self, command: Command) -> tuple[int, str]:
        """Run one README command as a shell would; its exit code and output."""
        if "/tmp/smoke/" in command.text:
            self.smoke_databases()
        for url in re.findall(r"postgresql://\S+", command.text):
            if url not in self.databases:  # the README's server: the tests' throwaway one
                assert self.postgres is not None, f"{command}: no PostgreSQL server"
                self.databases[url] = self.postgres()
        self.start_described_daemons(command)
        self.cut_token_files(command)
        for readme_id in re.findall(r"\b[0-9a-f]{16}\b", command.text):
            if readme_id not in self.surveys:
                self.describe(readme_id, command)
        self.fill(command)
        text = self.to_real(command.text)
        capture, echo = "both", False
        if text.endswith("; echo $?"):
            text, echo = text.removesuffix("; echo $?"), True
        if text.endswith(" 2>/dev/null"):
            text, capture = text.removesuffix(" 2>/dev/null"), "stdout"
        words = shlex.split(text)
        env = self.env(command.section, next(w for w in words if "=" not in w))
        while "=" in words[0]:
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        words = [env["HOME"] + w[1:] if w.startswith("~/") else w for w in words]
        if words[0] == "cat":
            # The file shown: written here, then read back like the README shows it.
            shown = "\n".join(command.expected) + "\n"
            (self.cwd(command.section) / words[1]).write_text(shown)
            if words[1].endswith(".json"):
                self.catted[json.loads(shown)["title"]] = shown
            return 0, shown
        if words[:2] == ["deniable-aggregator", "serve"]:
            return self.serve(words, env, command)
        typed = [found[1] for line in command.expected if (found := PROMPTED.match(line))]
        if typed:  # answered at its prompts: on a terminal, typing what the README shows
            return on_terminal(words[0], words[1:], env, typed, cwd=self.cwd(command.section))
        code, output = self.runner.run(words[0], words[1:], env, self.cwd(command.section), capture)
        if words[1:3] == ["survey", "create"] and code == 0:
            self.surveys[command.expected[0]] = output.split()[0]
        if echo:  # the line's own exit code is echo's
            return 0, output + f"{code}\n"
        return code, output


# Commands that cannot run here, with the reason (none today).
NOT_RUN: dict[str, str] = {}


@pytest.fixture
def walk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Walk]:
    runner = Runner()
    with ExitStack() as stack:
        started = Walk(tmp_path, runner, stack)
        started.postgres = lambda: str(request.getfixturevalue("postgres_url"))
        try:
            yield started
        finally:
            for daemon in started.daemons:
                daemon.terminate()
                daemon.wait(timeout=30)
            runner.close()


def test_every_readme_command_runs_with_the_exit_code_and_output_shown(walk: Walk) -> None:
    failures = []
    ran, every = 0, commands()
    assert len(every) >= 35
    without_postgres: set[str] = set()  # sections skipped: no PostgreSQL server here
    for command in every:
        if command.text in NOT_RUN or command.section in without_postgres:
            continue
        try:
            code, output = walk.run(command)
        except pytest.skip.Exception:  # CI installs the server and fails instead of this
            without_postgres.add(command.section)
            continue
        except Exception as error:  # reported with the failures before it
            failures.append(f"{command}: {error!r}")
            break
        ran += 1
        known = set(walk.surveys)
        want = masked("\n".join(command.expected), command.text, known)
        got = masked(walk.to_readme(output), command.text, known)
        shows_error = bool(command.expected) and command.expected[-1].startswith("Error:")
        if command.code is not None:
            code_ok = code == command.code
        else:
            code_ok = code != 0 if shows_error else code == 0
        if not code_ok or not matches(want, got):
            shown = ("error" if shows_error else 0) if command.code is None else command.code
            report = [str(command), f"exit {code} (README: {shown})", *got, "--- README:", *want]
            failures.append("\n".join(report))
    assert not failures, "\n\n".join(failures)
    skipped = sum(command.section in without_postgres for command in every)
    assert ran == len(every) - len(NOT_RUN) - skipped
    # The prose: the hostile test aggregator "saw one GetSurvey call and no report".
    assert walk.hostile is not None
    assert len(walk.hostile.of("GetSurvey")) == 1
    assert walk.hostile.submitted() == []


def exit_code_table() -> dict[str, int]:
    """The README's exit-code table: each gRPC status it lists, with its exit code."""
    rows = re.findall(r"^  \| (\d) \| .* \|\s*([A-Z_, ]*|any other)\s*\|$", TEXT, re.M)
    assert [int(code) for code, _ in rows] == list(range(7)), rows
    return {
        status.strip(): int(code)
        for code, statuses in rows
        for status in statuses.split(",")
        if status.strip() not in ("", "any other")
    }


def test_the_exit_code_table_is_the_one_the_tools_use() -> None:
    assert exit_code_table() == EXIT_CODES
    assert re.search(r"^  \| 1 \| .* \| any other \|$", TEXT, re.M)  # exit_code_for's default
