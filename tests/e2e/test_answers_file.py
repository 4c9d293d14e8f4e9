"""``deniable answer --answers-file``: answers from a file or standard input, not argv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deniable.aggregator.server._lifecycle import RunningServer
from deniable.client._remote import AggregatorClient
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli, binary_question


@pytest.fixture
def survey(admin: AggregatorClient) -> pb.Survey:
    return admin.create_survey("Exam", [binary_question("cheated"), binary_question("copied")])


def test_answers_from_standard_input_are_sent_without_a_prompt_or_warning(
    run_cli: RunCli, server: RunningServer, survey: pb.Survey
) -> None:
    lines = "# my answers\ncheated=yes\n\n  copied=no  \n"
    done = run_cli("deniable", "answer", "--server", server.address, survey.id,
                   "--answers-file", "-", "--json", input=lines)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Answered from --answers-file.") == 2
    assert "Warning" not in done.stderr
    assert json.loads(done.stdout)["sent"] is True


def test_answers_file_with_answer_and_its_errors(
    run_cli: RunCli, server: RunningServer, survey: pb.Survey, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.txt"
    answers.write_text("copied=n\n")
    base = ("answer", "--server", server.address, survey.id, "--dry-run")
    done = run_cli("deniable", *base, "--answers-file", str(answers), "--answer", "cheated=y")
    assert done.returncode == 0, done.stderr
    assert "Answered with --answer." in done.stdout
    assert "Answered from --answers-file." in done.stdout
    for extra, message in (
        (("--answers-file", str(answers), "--answer", "copied=yes"),
         "--answers-file: conflicting answers for question 'copied' (see --answer)"),
        (("--answers-file", str(tmp_path / "none.txt")),
         "--answers-file: cannot read"),
        (("--answers-file", "-", "--interactive"),
         "--interactive: standard input holds the answers (--answers-file -)"),
    ):  # fmt: skip
        refused = run_cli("deniable", *base, *extra, input="cheated=yes\n")
        assert refused.returncode == 2, refused.stderr
        assert message in refused.stderr
    answers.write_text("copied\n")
    bad = run_cli("deniable", *base, "--answers-file", str(answers))
    assert bad.returncode == 2
    assert "--answers-file 'copied': expected QID=VALUE" in bad.stderr
