"""Simulated participants that submit over gRPC to an embedded or remote aggregator."""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from deniable.aggregator.server._lifecycle import start_server
from deniable.aggregator.storage import open_storage
from deniable.client import AggregatorClient
from deniable.shared.mechanisms import Mechanism, ProportionEstimate
from deniable.shared.questions import question_type
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "GrpcSubmitter",
    "GrpcTransport",
    "aggregator_connection",
    "grpc_submitter",
    "no_progress",
]

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

QUESTION_ID = "simulated"
Result = TypeVar("Result", bound="DataclassInstance")


def no_progress(_count: int) -> None:
    """The default progress callback: nothing to show."""


def simulated_question(spec: Mechanism, options: tuple[str, ...] = ()) -> pb.Question:
    """The question a simulated survey asks: ``spec``'s type, domain and mechanism.

    Multiple-choice options default to ``0``..``k−1``.
    """
    qtype = question_type(spec.question_type)
    question = qtype.question_for(spec, options)
    question.id = QUESTION_ID
    question.text = f"Simulated {qtype.label} question"
    return question


def from_estimate(kind: type[Result], message: pb.Estimate, /, **fields: Any) -> Result:
    """A dataclass ``kind`` from an Estimate message: ``fields`` first, then its same names."""
    names = [f.name for f in dataclasses.fields(kind)]
    values = {name: fields[name] if name in fields else getattr(message, name) for name in names}
    return kind(**values)


@dataclass
class GrpcTransport:
    """Sends each simulated survey's reports in batches and reads the estimate back.

    Each call of :meth:`exchange` creates a survey with one question for ``spec``,
    submits the perturbed reports through SubmitReports (``batch_size`` per RPC, fresh
    random report ids), reads GetEstimate and closes the survey. ``progress`` is called
    after each SubmitReports call with the number of reports it sent.
    """

    client: AggregatorClient
    spec: Mechanism
    address: str
    confidence: float
    method: str
    batch_size: int = 1000
    embedded: bool = True
    options: tuple[str, ...] = ()
    question: pb.Question | None = None
    """The question to ask, when ``spec`` alone does not define it (a joint question)."""
    reports_sent: int = 0
    submit_seconds: float = 0.0
    surveys: list[str] = field(default_factory=list)
    progress: Callable[[int], None] = no_progress

    def exchange(self, reports: Any) -> pb.Estimate:
        """Submit one survey's ``reports`` (as ``perturb_many`` returns them); its estimate."""
        question = self.question or simulated_question(self.spec, self.options)
        survey = self.client.create_survey("deniable simulation", [question])
        self.surveys.append(survey.id)
        mechanism = survey.questions[0].mechanism
        started = time.perf_counter()
        values = self.spec.encode(reports)
        for start in range(0, len(values), self.batch_size):
            batch = [
                pb.Report(
                    report_id=secrets.token_hex(16),
                    survey_id=survey.id,
                    question_id=QUESTION_ID,
                    mechanism=mechanism,
                    **value,
                )
                for value in values[start : start + self.batch_size]
            ]
            self.client.submit_reports(batch)
            self.progress(len(batch))
        self.submit_seconds += time.perf_counter() - started
        self.reports_sent += len(values)
        estimate = self.client.get_estimate(survey.id, QUESTION_ID, self.confidence, self.method)
        self.client.close_survey(survey.id)
        return estimate

    @property
    def reports_per_second(self) -> float:
        """Reports per second through SubmitReports (building the messages included)."""
        return self.reports_sent / self.submit_seconds if self.submit_seconds else 0.0

    def summary(self) -> dict[str, Any]:
        """Where the reports went and how fast: the ``grpc`` entry of ``simulate --json``."""
        return {
            "address": self.address,
            "embedded": self.embedded,
            "batch_size": self.batch_size,
            "reports_sent": self.reports_sent,
            "reports_per_second": self.reports_per_second,
        }


@dataclass
class GrpcSubmitter(GrpcTransport):
    """Yes/no questions: submits randomized-response bits, returns a ProportionEstimate."""

    def __call__(self, reports: NDArray[np.bool_]) -> ProportionEstimate:
        """Create a survey, submit ``reports`` through SubmitReports, return GetEstimate."""
        return from_estimate(ProportionEstimate, self.exchange(reports))


@contextmanager
def aggregator_connection(
    server: str | None = None,
    admin_token: str | None = None,
    batch_size: int = 1000,
    tls: TlsConfig | None = None,
) -> Iterator[tuple[AggregatorClient, str]]:
    """Yield an admin client and its address: ``server``, or an embedded daemon on 127.0.0.1.

    The embedded daemon listens on a port chosen by the OS, stores into a temporary
    SQLite database, and is stopped (and the database removed) on exit. ``tls`` applies
    to ``server`` only (the embedded daemon is plaintext on loopback).

    Raises:
        ValueError: ``batch_size`` outside 1..10000, ``server`` without ``admin_token``,
            or ``tls`` without ``server``.
    """
    if not 1 <= batch_size <= 10_000:
        raise ValueError(f"batch_size must be in 1..10000, got {batch_size}")
    if tls is not None and server is None:
        raise ValueError("--tls-ca, --tls-cert and --tls-key need --server")
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
        client = AggregatorClient(address, admin_token=admin_token, tls=tls)
        yield stack.enter_context(client), address


@contextmanager
def grpc_submitter(
    spec: Mechanism,
    *,
    confidence: float,
    method: str,
    server: str | None = None,
    admin_token: str | None = None,
    batch_size: int = 1000,
    tls: TlsConfig | None = None,
    progress: Callable[[int], None] = no_progress,
) -> Iterator[GrpcSubmitter]:
    """Yield a yes/no submitter for ``server``, or for an embedded daemon on 127.0.0.1.

    ``progress`` is called with the number of reports each SubmitReports call sent. See
    :func:`aggregator_connection`; the kinds' submitters are in :mod:`._simulate_grpc_kinds`.
    """
    with aggregator_connection(server, admin_token, batch_size, tls) as (client, address):
        yield GrpcSubmitter(
            client, spec, address, confidence, method, batch_size,
            embedded=server is None, progress=progress,
        )  # fmt: skip
