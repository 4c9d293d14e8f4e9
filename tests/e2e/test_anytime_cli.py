"""``estimate --anytime`` against a real daemon: confidence sequences over gRPC and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deniable.client._remote import AggregatorClient
from deniable.shared.mechanisms import mechanism_of
from deniable.shared.mechanisms._base import Tally
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import Daemon, RunCli
from tests.e2e.test_end_to_end import create, write_spec


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon: the test creates its own survey (tests/conftest.py)."""
    return shared_daemon


SPEC = {
    "title": "Live survey",
    "questions": [
        {"id": "late", "text": "Were you late?", "alpha": 0.5},
        {"id": "os", "text": "Which OS?", "type": "categorical",
         "options": ["iOS", "Android", "Linux"], "epsilon": 1.0},
        {"id": "hours", "text": "Hours?", "type": "numeric", "min": 0, "max": 40,
         "mechanism": "laplace", "epsilon": 1.0},
    ],
}  # fmt: skip
N = 400


def submit(daemon: Daemon, survey_id: str) -> dict[str, Tally]:
    """N perturbed reports per question, sent over gRPC; the tallies they make."""
    rng = np.random.default_rng(8)
    truths = {"late": rng.random(N) < 0.3, "os": rng.choice(3, N, p=[0.5, 0.3, 0.2]),
              "hours": rng.uniform(0, 40, N)}  # fmt: skip
    tallies = {}
    with AggregatorClient(daemon.address) as client:
        survey = client.get_survey(survey_id)
        for question in survey.questions:
            spec = mechanism_of(question)
            reports = spec.perturb_many(truths[question.id], rng)
            values = spec.encode(reports)
            batch = [
                pb.Report(report_id=f"{question.id}-{i}", survey_id=survey_id,
                          question_id=question.id, mechanism=question.mechanism, **value)
                for i, value in enumerate(values)
            ]  # fmt: skip
            assert client.submit_reports(batch).stored == N
            tallies[question.id] = Tally(N, tuple(spec.tally(reports)))
    return tallies


def test_estimate_anytime_returns_the_confidence_sequences(
    run_cli: RunCli, daemon: Daemon, tmp_path: Path
) -> None:
    survey_id = create(run_cli, daemon, write_spec(tmp_path, SPEC))
    tallies = submit(daemon, survey_id)
    with AggregatorClient(daemon.address) as client:
        questions = {q.id: q for q in client.get_survey(survey_id).questions}
    command = ["deniable-aggregator", "estimate", "--server", daemon.address, survey_id]
    fixed = run_cli(*command, "--json")
    done = run_cli(*command, "--anytime", "--simultaneous", "--json")
    assert fixed.returncode == 0, fixed.stderr
    assert done.returncode == 0, done.stderr
    before = {e["question_id"]: e for e in json.loads(fixed.stdout)["estimates"]}
    after = {e["question_id"]: e for e in json.loads(done.stdout)["estimates"]}
    for qid, question in questions.items():
        want = (
            mechanism_of(question)
            .estimate(tallies[qid], 0.95, anytime=True, simultaneous=True)
            .wire_fields(question)
        )
        got = after[qid]
        assert got["anytime"] is True
        assert before[qid]["anytime"] is False
        assert got["method"] == want["method"] != before[qid]["method"]
        assert got["coverage"] == want["coverage"]
        assert got["coverage"].startswith("anytime-valid")
        if qid == "os":
            assert got["simultaneous"] is True
            assert "all 3 options covered at every look" in got["coverage"]
            bounds = [(o["ci_low"], o["ci_high"]) for o in got["options"]]
            assert bounds == [(o.ci_low, o.ci_high) for o in want["options"]]
            wider = [(o["ci_high"] - o["ci_low"]) for o in got["options"]]
            narrow = [(o["ci_high"] - o["ci_low"]) for o in before[qid]["options"]]
            assert all(w > v for w, v in zip(wider, narrow, strict=True))
        else:
            assert (got["ci_low"], got["ci_high"]) == (want["ci_low"], want["ci_high"])
            assert got["ci_low"] < before[qid]["ci_low"] <= before[qid]["ci_high"] < got["ci_high"]
            assert got["estimate"] == before[qid]["estimate"]
    text = run_cli(*command, "--anytime")
    assert text.returncode == 0, text.stderr
    assert "late: interval beta-binomial-mixture; anytime-valid: covers at every look" in (
        text.stdout
    )
    assert "hours: interval laplace-mixture; anytime-valid" in text.stdout
