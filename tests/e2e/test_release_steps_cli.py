"""Release steps through the analyst's CLI and a real daemon, across a restart."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deniable.client._remote import AggregatorClient
from deniable.shared.privacy import shuffled_epsilon
from tests._enrolled import enrolled
from tests.aggregator.server.test_release_gate import reports
from tests.conftest import ADMIN_TOKEN, Daemon, start_daemon
from tests.e2e._forks import Runner


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    """The console scripts, each invocation a fork of one process (tests/e2e/_forks.py)."""
    started = Runner()
    yield started
    started.close()


def _spec(tmp_path: Path, **extra: object) -> Path:
    spec = {"title": "Stepped", "questions": [{"id": "q1", "text": "Q1?", "epsilon": 1.0}]}
    path = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    path.write_text(json.dumps({**spec, **extra}))
    return path


def _aggregator(
    runner: Runner, daemon: Daemon, *args: str, capture: str = "stdout"
) -> subprocess.CompletedProcess[str]:
    """``deniable-aggregator ARGS --server DAEMON``: the exit code and the captured output.

    ``capture="both"``: stdout and stderr together, so an error alone proves stdout empty.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    full = [*args, "--server", daemon.address]
    code, output = runner.run("deniable-aggregator", full, env, capture=capture)
    return subprocess.CompletedProcess(full, code, output, output)


def _create(
    runner: Runner, daemon: Daemon, *args: str, capture: str = "stdout"
) -> subprocess.CompletedProcess[str]:
    token = ("--admin-token-file", str(daemon.token_file))
    return _aggregator(runner, daemon, "survey", "create", *token, *args, capture=capture)


def _estimate(runner: Runner, daemon: Daemon, survey_id: str, *args: str) -> dict[str, Any]:
    """The estimate as the admin sees it (live counts); ``--public`` in ``args``: without."""
    token = () if "--public" in args else ("--admin-token-file", str(daemon.token_file))
    args = tuple(arg for arg in args if arg != "--public")
    done = _aggregator(runner, daemon, "estimate", survey_id, "--json", *token, *args)
    assert done.returncode == 0, done.stdout
    (estimate,) = json.loads(done.stdout)["estimates"]
    return dict(estimate)


def test_stepped_survey_through_the_cli_and_a_restart(
    daemon: Daemon, runner: Runner, tmp_path: Path
) -> None:
    unenrolled = _create(runner, daemon, str(_spec(tmp_path)), "--release-step", "50",
                         capture="both")  # fmt: skip
    assert unenrolled.returncode == 2, unenrolled.stdout
    assert "release_step: a survey released in steps shows a central ε" in unenrolled.stdout
    spec = str(_spec(tmp_path, enrollment_required=True))
    done = _create(runner, daemon, spec, "--release-step", "50", "--json")
    assert done.returncode == 0, done.stdout
    created = json.loads(done.stdout)
    survey_id, local = created["id"], created["questions"][0]["privacy"]["epsilon"]
    assert created["release_step"] == "50"  # uint64 in the proto JSON mapping
    assert created["central"]["epsilon"] == shuffled_epsilon(local, 50, 1e-6)
    show = _aggregator(runner, daemon, "survey", "show", survey_id)
    assert (
        f"  releases: in steps of 50 reports per question (first at 50); central ε "
        f"{shuffled_epsilon(local, 50, 1e-6):.4f} at δ 1.0e-06 over 1 question(s)"
    ) in show.stdout
    listed = _aggregator(runner, daemon, "survey", "list")
    assert listed.stdout.rstrip().endswith("Stepped  [steps of 50]")

    # Each report from its own enrolled participant: the first release is at exactly 50.
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        survey = client.get_survey(survey_id)
        enrolled(client, client, reports(survey, "q1", 60, "a"))
    first = _estimate(runner, daemon, survey_id)
    assert (first["n"], first["stored"], first["next_release_at"]) == (50, 60, 100)
    assert first["central"]["step"] == 50
    assert first["central"]["epsilon"] == shuffled_epsilon(local, 50, 1e-6)
    assert "not the daemon's operator" in first["central"]["holds_against"]
    assert "enrollment tokens" in first["central"]["assumes"]

    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        enrolled(client, client, reports(survey, "q1", 20, "b"))
    frozen = _estimate(runner, daemon, survey_id, "--delta", "1e-3")
    assert (frozen["n"], frozen["stored"], frozen["estimate"]) == (50, 80, first["estimate"])
    assert frozen["central"]["delta"] == 1e-3
    assert frozen["central"]["epsilon"] == shuffled_epsilon(local, 50, 1e-3)
    token = ("--admin-token-file", str(daemon.token_file))
    text = _aggregator(runner, daemon, "estimate", survey_id, *token)
    assert "q1: released from 50 of 80 stored reports, next release at 100" in text.stdout
    public = _estimate(runner, daemon, survey_id, "--public")  # no live count without it
    assert (public["n"], public["stored"], public["stored_as_released"]) == (50, 50, True)
    assert "released from" not in _aggregator(runner, daemon, "estimate", survey_id).stdout
    assert "q1: central ε " in text.stdout
    assert "q1: the central ε assumes the other reports of each step come from" in text.stdout
    assert "against the operator, local ε 1.0000" in text.stdout

    assert daemon.stop() == 0
    restarted = start_daemon(tmp_path, db_url=daemon.db_url)
    try:
        again = _estimate(runner, restarted, survey_id)
        assert (again["n"], again["stored"], again["estimate"]) == (50, 80, first["estimate"])
        with AggregatorClient(restarted.address, admin_token=ADMIN_TOKEN) as client:
            enrolled(client, client, reports(survey, "q1", 30, "c"))  # 100: the next release
        refreshed = _estimate(runner, restarted, survey_id)
        assert (refreshed["n"], refreshed["stored"], refreshed["next_release_at"]) == (
            100, 110, 150,
        )  # fmt: skip
    finally:
        assert restarted.stop() == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    code, output = runner.run("deniable-aggregator", ["check", "--db", daemon.db_url], env)
    assert code == 0, output


BAD_STEPS: list[tuple[tuple[str, ...], dict[str, object], str]] = [
    (("--release-step", "-1"), {}, "-1 is not in the range 0<=x<=1000000000"),
    (("--release-step", "1000000001"), {}, "1000000001 is not in the range 0<=x<=1000000000"),
    ((), {"release_step": 2.5}, "spec.release_step: a whole number 0..1,000,000,000 is"),
    ((), {"release_step": "50"}, "(0: not stepped), got '50'"),
    (
        ("--release-step", "50"),
        {"release_step": 40},
        "--release-step 50 and spec.release_step 40 disagree; give one of them",
    ),
]


def test_survey_create_refuses_a_bad_release_step(
    daemon: Daemon, runner: Runner, tmp_path: Path
) -> None:
    for args, extra, message in BAD_STEPS:
        done = _create(runner, daemon, str(_spec(tmp_path, **extra)), *args, capture="both")
        assert done.returncode == 2, (args, extra, done.stdout)
        assert message in done.stdout, (args, extra, done.stdout)
        assert done.stdout.startswith(("Usage: ", "Error: "))  # nothing on stdout
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        assert client.list_surveys(include_closed=True) == []  # nothing stored


def test_estimate_delta_needs_a_stepped_survey(
    daemon: Daemon, runner: Runner, tmp_path: Path
) -> None:
    done = _create(runner, daemon, str(_spec(tmp_path)))
    assert done.returncode == 0, done.stdout
    survey_id = done.stdout.strip()
    with AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN) as client:
        client.submit_reports(reports(client.get_survey(survey_id), "q1", 5, "a"))
    show = _aggregator(runner, daemon, "survey", "show", survey_id)
    assert "releases: not stepped, every estimate is from all reports" in show.stdout
    bad = _aggregator(runner, daemon, "estimate", survey_id, "--delta", "2", capture="both")
    assert bad.returncode == 2
    assert bad.stdout.startswith("Usage: ")
    assert "--delta must be in (0, 1), got 2.0" in bad.stdout
    refused = _aggregator(runner, daemon, "estimate", survey_id, "--delta", "1e-6", capture="both")
    assert refused.returncode == 5, refused.stdout
    assert refused.stdout.startswith(
        f"Error: failed precondition: central_delta: survey {survey_id!r} is not released in "
        "steps with enrollment"
    )
    assert refused.stdout.count("\n") == 1  # the error alone: nothing on stdout
