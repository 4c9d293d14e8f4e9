"""On the wire, nothing but the randomized value may depend on the true answer."""

# A recording aggregator (a real gRPC server on 127.0.0.1:0) keeps every request's bytes and
# invocation metadata. With the same injected randomness, reports for different true answers
# differ only in the randomized value; request sizes and metadata are the same whatever the
# answer; and the installed ``deniable`` sends the same traffic whatever the answer.

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deniable.client._answer import Answer, build_reports
from deniable.client._remote import AggregatorClient
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
)
from deniable.shared.questions import numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.client._recording import RecordingAggregator, open_survey, recording_aggregator
from tests.conftest import RunCli, binary_question

SEEDS = range(100)
OPTIONS = ["Atlantis", "Zanzibar", "Avalon", "Lemuria"]


def _categorical(qid: str, mechanism: pb.Mechanism) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Where?",
        categorical=pb.CategoricalQuestion(options=OPTIONS),
        mechanism=mechanism,
    )


def _numeric(qid: str, kind: str) -> pb.Question:
    return pb.Question(
        id=qid,
        text="How long?",
        numeric=pb.NumericQuestion(min=0, max=100),
        mechanism=numeric_mechanism(kind, 0.0, 100.0, 1.0).to_message(),
    )


# question, its possible true answers, whether the randomness drawn is answer-independent
CASES: dict[str, tuple[pb.Question, list[Answer], bool]] = {
    "yes/no": (binary_question("q", 0.5), [True, False], True),
    "grr": (
        _categorical("q", GeneralizedRandomizedResponse(4, 0.5).to_message()),
        [0, 1, 2, 3],
        True,
    ),
    "oue": (
        _categorical("q", OptimizedUnaryEncoding(4, 0.25).to_message()),
        [0, 1, 2, 3],
        True,
    ),
    "olh": (
        _categorical("q", OptimizedLocalHashing(4, 3, 0.5).to_message()),
        [0, 1, 2, 3],
        True,
    ),
    "duchi": (_numeric("q", "duchi"), [0.0, 12.3, 99.9, 100.0], True),
    "hybrid": (_numeric("q", "hybrid"), [0.0, 12.3, 50.0, 99.9, 100.0], True),
    "laplace": (_numeric("q", "laplace"), [0.0, 12.3, 50.0, 99.9, 100.0], True),
    "piecewise": (_numeric("q", "piecewise"), [0.0, 12.3, 50.0, 99.9, 100.0], True),
}


def _without_value(request: bytes) -> bytes:
    parsed = pb.SubmitReportsRequest.FromString(request)
    for report in parsed.reports:
        report.ClearField("value")
    return parsed.SerializeToString(deterministic=True)


def _metadata(recorder: RecordingAggregator) -> set[tuple[tuple[str, str | bytes], ...]]:
    return {tuple(sorted(call.metadata)) for call in recorder.calls}


@pytest.mark.parametrize("case", list(CASES))
def test_same_randomness_different_answers_differ_only_in_the_value(case: str) -> None:
    question, truths, consumption_fixed = CASES[case]
    survey = open_survey("s", question)
    with (
        recording_aggregator([survey]) as (recorder, address),
        AggregatorClient(address, attempts=1) as client,
    ):
        after: dict[int, set[bytes]] = {}
        for seed in SEEDS:
            for truth in truths:
                rng = np.random.default_rng(seed)
                client.submit_reports([p.report for p in build_reports(survey, {"q": truth}, rng)])
                after.setdefault(seed, set()).add(rng.bytes(16))
    calls = recorder.of("SubmitReports")
    assert len(calls) == len(SEEDS) * len(truths)
    values = set()
    for index in range(0, len(calls), len(truths)):
        group = [call.request for call in calls[index : index + len(truths)]]
        assert len({_without_value(request) for request in group}) == 1  # same id, same all
        values |= {
            pb.SubmitReportsRequest.FromString(r).reports[0].SerializeToString() for r in group
        }
    assert len(values) > len(SEEDS)  # the value does vary: the comparison is not vacuous
    assert len(_metadata(recorder)) == 1  # the same metadata on every call
    sizes = {len(call.request) for call in calls}
    assert len(sizes) == 1, sizes  # the size never depends on the answer, nor on the value
    if consumption_fixed:  # as much randomness drawn whatever the answer: no timing signal
        assert all(len(drawn) == 1 for drawn in after.values())


def test_the_installed_client_sends_the_same_shape_whatever_the_answer(
    run_cli: RunCli, tmp_path: Path
) -> None:
    survey = open_survey(
        "s",
        binary_question("b", 0.5),
        _categorical("c", GeneralizedRandomizedResponse(4, 0.5).to_message()),
        _numeric("n", "hybrid"),
    )
    answers = {
        "first": ["b=yes", "c=Zanzibar", "n=0"],
        "second": ["b=no", "c=Lemuria", "n=87.25"],
    }
    with recording_aggregator([survey]) as (recorder, address):
        for run in range(3):
            for name, given in answers.items():
                done = run_cli(
                    "deniable", "answer", "--server", address, "s", "--yes", "--json",
                    *(f"--answer={answer}" for answer in given),
                    env={"XDG_DATA_HOME": str(tmp_path / f"{name}-{run}")},  # new participant
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                assert "Zanzibar" not in done.stdout
                assert json.loads(done.stdout)["sent"] is True
    assert [call.method for call in recorder.calls] == ["GetSurvey", "SubmitReports"] * 6
    assert len({call.request for call in recorder.of("GetSurvey")}) == 1
    submits = recorder.of("SubmitReports")
    assert len({len(call.request) for call in submits}) == 1  # same size for every answer
    assert len(_metadata(recorder)) == 1  # same metadata (user agent etc.) for every answer
    shapes = set()
    for request in recorder.submitted():
        assert b"Zanzibar" not in request.SerializeToString()
        for report in request.reports:
            report.ClearField("value")
            report.ClearField("report_id")
        shapes.add(request.SerializeToString(deterministic=True))
    assert len(shapes) == 1  # beyond ids and randomized values, every request is identical
