"""Enrollment from the command line, against a real daemon: survey tokens, deniable answer."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
from pathlib import Path

from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, binary_question

TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")


def one_line_error(
    done: subprocess.CompletedProcess[str], code: int, text: str, after_display: bool = False
) -> None:
    """Exit ``code`` with one ``Error:`` line holding ``text``: all of stderr, or its last line.

    ``after_display``: the review of the reports was shown (on stderr with --json) first.
    """
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    error = done.stderr.splitlines()[-1] + "\n" if after_display else done.stderr
    assert error.startswith("Error: "), done.stderr
    assert error.count("\n") == 1, done.stderr
    assert text in error, done.stderr
    assert "Traceback" not in done.stderr


def survey_state(daemon: Daemon, survey_id: str) -> tuple[int, int]:
    """(reports stored, tokens issued)."""
    with AggregatorClient(daemon.address) as client:
        survey = client.get_survey(survey_id)
    return survey.reports, survey.tokens_issued


def test_survey_create_show_and_tokens(daemon: Daemon, run_cli: RunCli, tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "title": "Enrolled",
                "enrollment_required": True,
                "min_reports": 2,
                "questions": [{"id": "q1", "text": "Q1?", "epsilon": 1.0}],
            }
        )
    )
    admin = ("--server", daemon.address, "--admin-token-file", str(daemon.token_file))
    created = run_cli("deniable-aggregator", "survey", "create", *admin, str(spec))
    assert created.returncode == 0, created.stderr
    survey_id = created.stdout.strip()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("deniable-aggregator", "survey", *args)

    printed = cli("tokens", *admin, survey_id, "--count", "3")
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert len(lines) == 3
    assert all(TOKEN.fullmatch(line) for line in lines)
    as_json = json.loads(cli("tokens", *admin, survey_id, "--count", "2", "--json").stdout)
    assert as_json["survey_id"] == survey_id
    assert len(set(as_json["tokens"]) | set(lines)) == 5

    output = tmp_path / "tokens.txt"
    written = cli("tokens", *admin, survey_id, "--count", "4", "--output", str(output))
    assert (written.returncode, written.stdout) == (0, ""), written.stderr
    assert f"issued 4 tokens for survey {survey_id!r} into {output}" in written.stderr
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    content = output.read_text()
    assert len(content.split()) == 4
    assert all(TOKEN.fullmatch(token) for token in content.split())
    assert survey_state(daemon, survey_id) == (0, 9)

    again = cli("tokens", *admin, survey_id, "--count", "1", "--output", str(output))
    one_line_error(again, 2, f"--output {output}: already exists; refusing to overwrite it")
    assert output.read_text() == content
    bad_count = tmp_path / "never.txt"
    refused = cli("tokens", *admin, survey_id, "--count", "0", "--output", str(bad_count))
    one_line_error(refused, 2, "count: must be 1..100,000 tokens per call, got 0")
    assert not bad_count.exists()
    wrong = tmp_path / "wrong-admin-token"
    wrong.write_text("not-the-admin-token-at-all\n")
    denied = cli(
        "tokens", "--server", daemon.address, "--admin-token-file", str(wrong), survey_id,
        "--count", "1",
    )  # fmt: skip
    one_line_error(denied, 6, "unauthenticated")
    assert survey_state(daemon, survey_id) == (0, 9)

    shown = cli("show", "--server", daemon.address, survey_id)
    assert "  enrollment: required, 9 tokens issued; release gate: 2 reports per question" in (
        shown.stdout
    )
    document = json.loads(cli("show", "--server", daemon.address, survey_id, "--json").stdout)
    assert (document["enrollment_required"], document["min_reports"]) == (True, "2")
    assert document["tokens_issued"] == "9"  # uint64: a string in the proto JSON mapping


def create_enrolled(daemon: Daemon, count: int) -> tuple[pb.Survey, list[str]]:
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        questions = [binary_question("q1"), binary_question("q2", 0.25)]
        survey = admin.create_survey("Enrolled", questions, enrollment_required=True)
        return survey, admin.issue_tokens(survey.id, count)


def test_answer_with_a_token_end_to_end(daemon: Daemon, run_cli: RunCli, tmp_path: Path) -> None:
    survey, tokens = create_enrolled(daemon, 3)
    token_file = tmp_path / "my-token"
    token_file.write_text(f"\n{tokens[0]}  \n")
    base = ("answer", "--server", daemon.address, survey.id, "--yes", "--json")
    same = (*base, "--answer", "q1=yes", "--answer", "q2=no")

    def answer(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli("deniable", *args, env=env)

    first = answer(*same, "--token-file", str(token_file))
    assert first.returncode == 0, first.stderr
    sent = json.loads(first.stdout)
    assert (sent["stored"], sent["already_stored"]) == (2, 0)
    # Answering again on this device is refused before anything is sent: one report per
    # question, drawn once.
    again = answer(*same, "--token", tokens[0])
    one_line_error(again, 5, f"you already answered survey {survey.id} at {daemon.address}")
    assert again.stdout == ""
    assert survey_state(daemon, survey.id) == (2, 3)
    # The same token on another device: its fresh reports are refused by the aggregator.
    elsewhere = {"XDG_DATA_HOME": str(tmp_path / "same-token-elsewhere")}
    changed = answer(*base, "--answer", "q1=no", "--answer", "q2=no", "--token", tokens[0],
                     env=elsewhere)  # fmt: skip
    one_line_error(changed, 5, "this enrollment token already answered a question", True)
    assert changed.stdout == ""
    assert "question 'q1'" in changed.stderr
    assert survey_state(daemon, survey.id) == (2, 3)

    other = {"XDG_DATA_HOME": str(tmp_path / "second-participant"), "DENIABLE_TOKEN": tokens[1]}
    assert answer(*same, env=other).returncode == 0
    assert survey_state(daemon, survey.id) == (4, 3)

    fresh = {"XDG_DATA_HOME": str(tmp_path / "third-participant")}
    missing = answer(*same, env=fresh)
    one_line_error(missing, 6, f"survey {survey.id!r} requires an enrollment token")
    assert not (tmp_path / "third-participant").exists()  # nothing charged, nothing memoized
    unknown_token = "u" * 32
    unknown = answer(*same, "--token", unknown_token, env=fresh)
    one_line_error(unknown, 6, "the aggregator refused the enrollment token", True)
    assert unknown_token not in unknown.stderr
    assert survey_state(daemon, survey.id) == (4, 3)

    both = answer(*same, "--token-file", str(token_file), env={"DENIABLE_TOKEN": tokens[2]})
    one_line_error(both, 2, "DENIABLE_TOKEN and --token-file are mutually exclusive")
    unreadable = answer(*same, "--token-file", str(tmp_path / "nope"))
    one_line_error(unreadable, 2, f"--token-file {tmp_path / 'nope'}: cannot read it")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    one_line_error(answer(*same, "--token-file", str(empty)), 2, "the enrollment token is empty")
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as admin:
        plain = admin.create_survey("Plain", [binary_question("q1")])
    on_plain = answer(
        "answer", "--server", daemon.address, plain.id, "--yes", "--answer", "q1=yes",
        "--token", tokens[2],
    )  # fmt: skip
    one_line_error(on_plain, 2, f"survey {plain.id!r} does not use enrollment tokens")
    assert survey_state(daemon, plain.id) == (0, 0)
    assert survey_state(daemon, survey.id) == (4, 3)

    # The tokens (and their hashes) appear nowhere: not in the daemon's log, the
    # participants' ledgers and memos, or any output but the answer's own.
    daemon.stop()
    log = daemon.stderr_path.read_text()
    assert "tokens issued" in log  # the log is there, with the issue event
    local = b"".join(
        path.read_bytes()
        for root in (Path(os.environ["XDG_DATA_HOME"]), tmp_path / "second-participant")
        for path in root.rglob("*")
        if path.is_file()
    )
    assert local  # ledgers and memos were written
    for token in tokens[:2]:
        digest = hashlib.sha256(token.encode()).digest()
        assert token not in log
        assert digest.hex() not in log
        assert token.encode() not in local
        assert token not in first.stdout + again.stderr + changed.stderr
