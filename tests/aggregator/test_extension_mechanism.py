"""A mechanism defined only here, registered, runs through simulate over gRPC and check.

Symmetric unary encoding (SUE, the basic one-time RAPPOR response; Wang et al., USENIX
Security 2017): one bit per option, the true option's bit 1 with probability 1 − q and
every other bit 1 with probability q. It needs no change to any module of the package:
it subclasses the frequency-oracle base, travels as a ``RegisteredMechanism`` with its
reports in ``Report.encoded``, and the daemon, the simulation and the tally check reach
it through the registry.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import ArrayLike, NDArray

from deniable.aggregator.analysis.check._tallies import check
from deniable.aggregator.analysis.planning._compared import plan_question
from deniable.aggregator.analysis.simulation._categorical import simulate_categorical
from deniable.aggregator.analysis.simulation._grpc_kinds import categorical_grpc_submitter
from deniable.aggregator.server import start_server
from deniable.aggregator.storage import open_storage
from deniable.aggregator.storage.sqlite import SqliteReader
from deniable.client import AggregatorClient, RemoteError
from deniable.shared.mechanisms import (
    FrequencyOracle,
    ReportValueError,
    mechanism_of,
    register,
    registered,
    unregister,
)
from deniable.shared.questions import CATEGORICAL, categorical_mechanism
from deniable.shared.sampling import bernoulli, source_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN


@dataclass(frozen=True)
class SymmetricUnaryEncoding(FrequencyOracle):
    """SUE: k bits, the true option's bit kept w.p. 1 − q, every other bit set w.p. q."""

    name: ClassVar[str] = "sue_test"
    title: ClassVar[str] = "symmetric unary encoding"
    value_field: ClassVar[str] = "encoded"

    q: float

    def _check_parameters(self) -> None:
        if not 0.0 < self.q < 0.5:
            raise ValueError(f"q must be strictly between 0 and 1/2, got {self.q!r}")

    @classmethod
    def from_epsilon(cls, k: int, epsilon: float) -> SymmetricUnaryEncoding:
        q = 1.0 / (math.exp(epsilon / 2) + 1.0)
        while not cls(k, q).certifies(epsilon):
            q = math.nextafter(q, 0.5)
        return cls(k, q)

    @classmethod
    def from_question(cls, question: pb.Question) -> SymmetricUnaryEncoding:
        parameters = question.mechanism.registered.parameters
        return cls(len(question.categorical.options), parameters["q"])

    @property
    def p_star_exact(self) -> Fraction:
        return 1 - Fraction(self.q)

    @property
    def q_star_exact(self) -> Fraction:
        return Fraction(self.q)

    @property
    def privacy_ratio(self) -> Fraction:
        odds = (1 - Fraction(self.q)) / Fraction(self.q)
        return odds * odds  # two bits change between any two answers

    def parameters(self) -> dict[str, float]:
        return {"q": self.q}

    def explain(self) -> str:
        return f"One noisy flag per option (epsilon = {self.epsilon:.2f})."

    def perturb_many(self, truths: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        truth = np.asarray(truths, dtype=np.int64).ravel()
        source = source_for(rng)
        bits = bernoulli(Fraction(self.q), truth.size * self.k, source).reshape(-1, self.k)
        bits[np.arange(truth.size), truth] = bernoulli(self.p_star_exact, truth.size, source)
        return bits

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        rows = np.asarray(reports, dtype=bool).reshape(-1, self.k)
        return [{"encoded": np.packbits(row, bitorder="little").tobytes()} for row in rows]

    def decode(self, values: Any) -> NDArray[np.bool_]:
        width = (self.k + 7) // 8
        for row, value in enumerate(values):
            if len(value) != width:
                raise ReportValueError(row, "encoded", f"must be {width} bytes, got {len(value)}")
        packed = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(-1, width)
        bits = np.unpackbits(packed, axis=1, bitorder="little").astype(bool)
        padded = np.flatnonzero(bits[:, self.k :].any(axis=1))
        if padded.size:
            raise ReportValueError(int(padded[0]), "encoded", "padding bits are set")
        return bits[:, : self.k]

    def support_counts(self, reports: Any) -> NDArray[np.int64]:
        counts: NDArray[np.int64] = np.count_nonzero(np.asarray(reports), axis=0).astype(np.int64)
        return counts


@pytest.fixture
def sue() -> Iterator[type[SymmetricUnaryEncoding]]:
    register(SymmetricUnaryEncoding)
    yield SymmetricUnaryEncoding
    unregister(SymmetricUnaryEncoding.name)
    assert SymmetricUnaryEncoding.name not in registered()


def test_the_extension_is_exact_and_round_trips_on_the_wire(
    sue: type[SymmetricUnaryEncoding],
) -> None:
    mechanism = categorical_mechanism("sue_test", 5, epsilon=1.0)
    assert type(mechanism) is sue
    assert mechanism.certifies(1.0)
    assert not mechanism.certifies(math.nextafter(mechanism.epsilon, 0))
    question = CATEGORICAL.question_for(mechanism, ["a", "b", "c", "d", "e"])
    assert question.mechanism.WhichOneof("kind") == "registered"
    assert mechanism_of(question) == mechanism
    plan = plan_question("categorical", 5, mechanism="sue_test", epsilon=1.0, margin=0.05)
    assert plan.mechanism == "sue_test"
    assert "sue_test" in [row.mechanism for row in plan.mechanisms]


def test_simulate_over_grpc_and_check_count_every_report_once(
    sue: type[SymmetricUnaryEncoding], tmp_path: Path
) -> None:
    mechanism = categorical_mechanism("sue_test", 4, epsilon=2.0)
    names = ["w", "x", "y", "z"]
    db = tmp_path / "extension.db"
    running = start_server(open_storage(f"sqlite:///{db}"), ADMIN_TOKEN, "127.0.0.1:0")
    try:
        with categorical_grpc_submitter(
            mechanism, options=names, confidence=0.95, method="clopper-pearson",
            server=running.address, admin_token=ADMIN_TOKEN, batch_size=250,
        ) as submitter:  # fmt: skip
            result = simulate_categorical(
                1000, [0.4, 0.3, 0.2, 0.1], mechanism, options=names, repeats=2, seed=11,
                submit=submitter,
            )  # fmt: skip
        with AggregatorClient(running.address, admin_token=ADMIN_TOKEN, attempts=1) as client:
            question = CATEGORICAL.question_for(mechanism, names)
            question.id, question.text = "pick", "Which one?"
            survey = client.create_survey("extension", [question])
            stored = survey.questions[0]
            report = pb.Report(survey_id=survey.id, question_id="pick", mechanism=stored.mechanism)
            padded = pb.Report(report_id="padded", encoded=b"\xf0", **_fields(report))
            with pytest.raises(RemoteError) as refused:
                client.submit_reports([padded])
            (value,) = mechanism.encode(mechanism.perturb_many([2]))
            good = pb.Report(report_id="good", **value, **_fields(report))
            accepted = client.submit_reports([good, good])
            estimate = client.get_estimate(survey.id, "pick")
    finally:
        running.stop(grace=1.0)
    # The simulation's two surveys went through the daemon, each estimate read back equal
    # to the one computed locally from the same reports (simulate checks that).
    assert result.transport == "grpc"
    assert result.first.mechanism == "sue_test"
    assert result.first.n == 1000
    assert len(submitter.surveys) == 2
    assert stored.mechanism.registered.name == "sue_test"
    assert stored.privacy.epsilon == mechanism.epsilon
    assert refused.value.code == "INVALID_ARGUMENT"
    assert refused.value.details == "reports[0].encoded: padding bits are set"
    assert (accepted.stored, accepted.already_stored) == (1, 1)
    assert (estimate.n, estimate.mechanism) == (1, "sue_test")
    assert [option.option for option in estimate.options] == names
    with SqliteReader(str(db)) as reader:
        report_check = check(reader)
    assert report_check.ok
    counted = {s.survey_id: s.reports for s in report_check.surveys}
    assert counted == {**dict.fromkeys(submitter.surveys, 1000), survey.id: 1}


def _fields(report: pb.Report) -> dict[str, Any]:
    return {
        "survey_id": report.survey_id,
        "question_id": report.question_id,
        "mechanism": report.mechanism,
    }
