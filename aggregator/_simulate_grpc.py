"""Simulated participants that submit over gRPC to an embedded or remote aggregator."""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from aggregator._proportion import ProportionEstimate
from aggregator._server import start_server
from aggregator.storage import open_storage
from client._remote import AggregatorClient
from shared import RandomizedResponseSpec
from shared.deniable.v1 import aggregator_pb2 as pb

__all__ = ["GrpcSubmitter", "grpc_submitter"]

QUESTION_ID = "simulated"


@dataclass
class GrpcSubmitter:
    """Submits each simulated survey's reports in batches and reads the estimate back."""

    client: AggregatorClient
    spec: RandomizedResponseSpec
    address: str
    confidence: float
    method: str
    batch_size: int = 1000
    embedded: bool = True
    reports_sent: int = 0
    submit_seconds: float = 0.0
    surveys: list[str] = field(default_factory=list)

    def __call__(self, reports: NDArray[np.bool_]) -> ProportionEstimate:
        """Create a survey, submit ``reports`` through SubmitReports, return GetEstimate."""
        question = pb.Question(
            id=QUESTION_ID,
            text="Simulated yes/no question",
            binary=pb.BinaryQuestion(),
            mechanism=pb.Mechanism(
                randomized_response=pb.RandomizedResponse(alpha=self.spec.alpha)
            ),
        )
        survey = self.client.create_survey("deniable simulation", [question])
        self.surveys.append(survey.id)
        mechanism = survey.questions[0].mechanism
        started = time.perf_counter()
        for start in range(0, reports.size, self.batch_size):
            batch = [
                pb.Report(
                    report_id=secrets.token_hex(16),
                    survey_id=survey.id,
                    question_id=QUESTION_ID,
                    mechanism=mechanism,
                    bit=bool(bit),
                )
                for bit in reports[start : start + self.batch_size]
            ]
            self.client.submit_reports(batch)
        self.submit_seconds += time.perf_counter() - started
        self.reports_sent += int(reports.size)
        estimate = self.client.get_estimate(survey.id, QUESTION_ID, self.confidence, self.method)
        self.client.close_survey(survey.id)
        names = [f.name for f in dataclasses.fields(ProportionEstimate)]
        return ProportionEstimate(**{name: getattr(estimate, name) for name in names})

    @property
    def reports_per_second(self) -> float:
        """Reports per second through SubmitReports (building the messages included)."""
        return self.reports_sent / self.submit_seconds if self.submit_seconds else 0.0


@contextmanager
def grpc_submitter(
    spec: RandomizedResponseSpec,
    *,
    confidence: float,
    method: str,
    server: str | None = None,
    admin_token: str | None = None,
    batch_size: int = 1000,
) -> Iterator[GrpcSubmitter]:
    """Yield a submitter for ``server``, or for an embedded daemon on 127.0.0.1.

    The embedded daemon listens on a port chosen by the OS, stores into a temporary
    SQLite database, and is stopped (and the database removed) on exit.
    """
    if not 1 <= batch_size <= 10_000:
        raise ValueError(f"batch_size must be in 1..10000, got {batch_size}")
    with ExitStack() as stack:
        if server is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="deniable-sim-"))
            admin_token = secrets.token_urlsafe(32)
            running = start_server(
                open_storage(f"sqlite:///{folder}/simulation.db"), admin_token, "127.0.0.1:0"
            )
            stack.callback(running.stop, 2.0)
            address = running.address
        else:
            if not admin_token:
                raise ValueError("simulating against --server needs the admin token")
            address = server
        client = stack.enter_context(AggregatorClient(address, admin_token=admin_token))
        yield GrpcSubmitter(
            client, spec, address, confidence, method, batch_size, embedded=server is None
        )
