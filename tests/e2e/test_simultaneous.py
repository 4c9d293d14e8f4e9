"""Simultaneous intervals through GetEstimate (real server) and ``estimate --simultaneous``."""

from __future__ import annotations

import json
from typing import cast

import numpy as np
import pytest

from deniable.client._remote import AggregatorClient
from deniable.shared.mechanisms import FrequencyEstimate, Tally, mechanism_of
from deniable.shared.questions import categorical_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN, Daemon, RunCli, binary_question


@pytest.fixture
def daemon(shared_daemon: Daemon) -> Daemon:
    """The worker's daemon: the test creates its own survey (tests/conftest.py)."""
    return shared_daemon


OPTIONS = ["iOS", "Android", "MacOS", "Windows", "Linux"]


def submit_survey(client: AggregatorClient, anonymous: AggregatorClient) -> pb.Survey:
    """A survey with an OUE question (5 options, 800 reports) and a yes/no one (50)."""
    spec = categorical_mechanism("oue", len(OPTIONS), epsilon=1.0)
    question = pb.Question(
        id="os", text="Which OS?", categorical=pb.CategoricalQuestion(options=OPTIONS),
        mechanism=spec.to_message(),
    )  # fmt: skip
    survey = client.create_survey("OS", [question, binary_question("late")])
    rng = np.random.default_rng(5)
    truths = rng.choice(len(OPTIONS), size=800, p=[0.1, 0.4, 0.2, 0.2, 0.1])
    reports = [
        pb.Report(report_id=f"os-{i}", survey_id=survey.id, question_id="os",
                  mechanism=survey.questions[0].mechanism, **value)
        for i, value in enumerate(spec.encode(spec.perturb_many(truths, rng)))
    ] + [
        pb.Report(report_id=f"late-{i}", survey_id=survey.id, question_id="late",
                  mechanism=survey.questions[1].mechanism, bit=bool(i % 3 == 0))
        for i in range(50)
    ]  # fmt: skip
    assert anonymous.submit_reports(reports).stored == 850
    return survey


def intervals(estimate: pb.Estimate) -> list[tuple[float, float]]:
    return [(o.ci_low, o.ci_high) for o in estimate.options]


def test_get_estimate_simultaneous_widens_every_interval_and_says_so(
    admin: AggregatorClient, anonymous: AggregatorClient
) -> None:
    survey = submit_survey(admin, anonymous)
    per_option = anonymous.get_estimate(survey.id, "os")
    together = anonymous.get_estimate(survey.id, "os", simultaneous=True)
    assert (per_option.simultaneous, together.simultaneous) == (False, True)
    assert per_option.coverage.startswith("per option (not simultaneous: with 5 options")
    assert together.coverage.startswith("simultaneous over 5 options: Bonferroni")
    assert "tightened to the simplex" in together.coverage
    assert [o.estimate for o in together.options] == [o.estimate for o in per_option.options]
    for (low, high), (wide_low, wide_high), option in zip(
        intervals(per_option), intervals(together), together.options, strict=True
    ):
        assert wide_low <= low <= high <= wide_high
        assert wide_low <= option.estimate <= wide_high
    assert sum(h - lo for lo, h in intervals(together)) > sum(
        h - lo for lo, h in intervals(per_option)
    )
    # The daemon's figures are the library's for the same counts.
    spec = mechanism_of(survey.questions[0])
    counts = tuple(int(o.support) for o in together.options)
    local = cast(
        FrequencyEstimate,
        spec.estimate(Tally(800, counts), 0.95, "clopper-pearson", simultaneous=True),
    )
    assert intervals(together) == list(zip(local.ci_low, local.ci_high, strict=True))
    # A yes/no question has one interval: simultaneous changes nothing, and it says so.
    plain, asked = (
        anonymous.get_estimate(survey.id, "late", simultaneous=flag) for flag in (False, True)
    )
    assert (asked.ci_low, asked.ci_high) == (plain.ci_low, plain.ci_high)
    assert asked.coverage == plain.coverage
    assert asked.coverage.startswith("the yes-share (one interval")


@pytest.fixture
def daemon_survey(daemon: Daemon) -> str:
    with (
        AggregatorClient(daemon.address, admin_token=ADMIN_TOKEN, attempts=1) as admin,
        AggregatorClient(daemon.address, attempts=1) as anonymous,
    ):
        return submit_survey(admin, anonymous).id


def test_estimate_cli_simultaneous_json_and_text(
    run_cli: RunCli, daemon: Daemon, daemon_survey: str
) -> None:
    base = ["deniable-aggregator", "estimate", "--server", daemon.address, daemon_survey]
    shown = {}
    for flag in ([], ["--simultaneous"]):
        done = run_cli(*base, "--question", "os", "--json", *flag)
        assert done.returncode == 0, done.stderr
        (shown[bool(flag)],) = json.loads(done.stdout)["estimates"]
    assert (shown[False]["simultaneous"], shown[True]["simultaneous"]) == (False, True)
    assert shown[True]["coverage"].startswith("simultaneous over 5 options: Bonferroni")
    assert shown[False]["coverage"].startswith("per option (not simultaneous")
    per_option, together = (
        [(o["ci_low"], o["ci_high"]) for o in shown[flag]["options"]] for flag in (False, True)
    )
    assert per_option != together
    for (low, high), (wide_low, wide_high) in zip(per_option, together, strict=True):
        assert wide_low <= low <= high <= wide_high
    text = run_cli(*base, "--simultaneous")
    assert text.returncode == 0, text.stderr
    assert "os: interval clopper-pearson; simultaneous over 5 options: Bonferroni" in text.stdout
    assert "late: interval clopper-pearson; the yes-share (one interval" in text.stdout
    assert "CI of estimate" in text.stdout
    assert "unbiased = raw, may lie outside it" in text.stdout
    plain = run_cli(*base)
    assert "os: interval clopper-pearson; per option (not simultaneous" in plain.stdout
