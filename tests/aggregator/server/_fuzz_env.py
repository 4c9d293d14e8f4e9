"""The fuzz suite's server: surveys of every kind, raw calls, and the invariant checks."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from google.protobuf.message import DecodeError, Message

from deniable.aggregator.server._lifecycle import RunningServer, start_server
from deniable.aggregator.storage import open_storage
from deniable.shared.mechanisms import mechanism_of
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server import _fuzz_strategies as fs
from tests.conftest import ADMIN_TOKEN

Code = grpc.StatusCode
ADMIN = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
HANG_GUARD = 60.0  # seconds per call: only a guard against a hang, never a speed limit
_METHODS = pb.DESCRIPTOR.services_by_name["Aggregator"].methods
REQUEST = {m.name: getattr(pb, m.input_type.name) for m in _METHODS}
RESPONSE = {m.name: getattr(pb, m.output_type.name) for m in _METHODS}
STREAMING = frozenset(m.name for m in _METHODS if m.server_streaming)
# Known bugs, each pinned by a strict xfail test in test_fuzz_findings.py: the fuzz tests
# accept these answers (and still check that nothing changed) until they are fixed. Delete
# an entry together with its test's xfail mark.


def oversized(metadata: Any) -> bool:
    """Whether gRPC may refuse the headers: with its own, over its 8 KiB soft limit."""
    return sum(len(key) + len(value) for key, value in metadata or ()) > 6000


def parse(method: str, request: Message | bytes) -> Any:
    """The request as a message of the RPC's type, or None if the bytes do not parse."""
    if isinstance(request, Message):
        return request
    try:
        return REQUEST[method].FromString(request)
    except DecodeError:
        return None


@dataclass(frozen=True)
class Target:
    """One question of a survey and a pool of valid report values for it."""

    survey_id: str
    question: pb.Question
    values: list[dict[str, Any]]

    def report(self, report_id: str, index: int = 0) -> pb.Report:
        """A valid report with this id and the pool's ``index``-th value."""
        return pb.Report(
            report_id=report_id,
            survey_id=self.survey_id,
            question_id=self.question.id,
            mechanism=self.question.mechanism,
            **self.values[index % len(self.values)],
        )


@dataclass
class Outcome:
    """A call's status, details and serialized response (empty unless OK).

    A streaming call's response is its messages' bytes joined: one message of the type.
    """

    code: Code
    details: str
    response: bytes = b""


@dataclass
class Env:
    """The running server, a raw channel to it, and what was created up front."""

    running: RunningServer
    channel: grpc.Channel
    db: sqlite3.Connection
    surveys: dict[str, pb.Survey] = field(default_factory=dict)
    targets: dict[str, list[Target]] = field(default_factory=dict)  # open, closed, enrolled
    ids: Iterator[str] = field(default_factory=lambda: fs.fresh_ids("f"))
    stored: dict[str, pb.Report] = field(default_factory=dict)  # open surveys' seed reports

    def __repr__(self) -> str:
        return f"Env({self.running.address})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # how Hypothesis shows a falsifying example

    def call(self, method: str, request: Message | bytes, metadata: Any = ADMIN) -> Outcome:
        """Send ``request`` as bytes (no client-side checks) and return what came back."""
        data = request if isinstance(request, bytes) else request.SerializeToString()
        path = f"/deniable.v1.Aggregator/{method}"
        try:
            if method in STREAMING:
                stream: Any = self.channel.unary_stream(path)
                chunks = stream(data, timeout=HANG_GUARD, metadata=metadata)
                return Outcome(Code.OK, "", b"".join(chunks))
            stub: Any = self.channel.unary_unary(path)
            return Outcome(Code.OK, "", stub(data, timeout=HANG_GUARD, metadata=metadata))
        except grpc.RpcError as error:
            return Outcome(error.code(), error.details() or "")

    def fingerprint(self) -> tuple[object, ...]:
        """Everything a call could change: surveys, every tally, every table's row count."""
        storage = self.running.storage
        surveys = storage.list_surveys(include_closed=True)
        tables = [
            t
            for (t,) in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return (
            [s.SerializeToString(deterministic=True) for s in surveys],
            [(s.id, q.id, storage.tally(s.id, q.id)) for s in surveys for q in s.questions],
            [(t, self.db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()) for t in tables],
        )

    def known_ids(self) -> set[str]:
        """The ids of every survey the server holds."""
        return {s.id for s in self.running.storage.list_surveys(include_closed=True)}

    def reports(self) -> int:
        """Reports stored across every survey."""
        return sum(s.reports for s in self.running.storage.list_surveys(include_closed=True))

    def tallies(self) -> Counter[tuple[str, str]]:
        """Every question's report count n."""
        storage = self.running.storage
        return Counter(
            {
                (s.id, q.id): getattr(storage.tally(s.id, q.id), "n", 0)
                for s in storage.list_surveys(include_closed=True)
                for q in s.questions
            }
        )

    def checked(
        self,
        method: str,
        request: Message | bytes,
        metadata: Any = ADMIN,
        expect: bool | None = None,
    ) -> Outcome:
        """Call and check the invariants; ``expect`` True/False: must succeed/be refused."""
        before = self.fingerprint()
        outcome = self.call(method, request, metadata)
        what = f"{method} answered {outcome.code.name}: {outcome.details[:300]!r}"
        big = {Code.RESOURCE_EXHAUSTED} if oversized(metadata) else set()
        assert outcome.code in fs.ALLOWED[method] | big, what
        if outcome.code == Code.OK:
            RESPONSE[method].FromString(outcome.response)  # a well-formed response
        else:
            assert self.fingerprint() == before, f"refused call changed the state: {what}"
        if expect is not None:
            assert (outcome.code == Code.OK) == expect, what
        self.assert_serving()
        return outcome

    def assert_serving(self) -> None:
        """A known-good call still works."""
        request = pb.GetSurveyRequest(survey_id=self.surveys["yesno"].id)
        assert self.call("GetSurvey", request, None).code == Code.OK

    def submit(self, reports: list[pb.Report], token: str = "") -> pb.SubmitReportsResponse:
        """Submit a valid batch; it must be stored."""
        request = pb.SubmitReportsRequest(reports=reports, enrollment_token=token)
        outcome = self.call("SubmitReports", request)
        assert outcome.code == Code.OK, outcome.details
        return pb.SubmitReportsResponse.FromString(outcome.response)


def survey_request(
    title: str, kinds: list[tuple[str, pb.Mechanism]], **extra: Any
) -> pb.CreateSurveyRequest:
    """A valid CreateSurvey request with one question per (kind, mechanism)."""
    questions = []
    for i, (kind, mechanism) in enumerate(kinds):
        question = pb.Question(id=f"{kind[:3]}{i}", text=f"{title} {i}?", mechanism=mechanism)
        if kind == "binary":
            question.binary.SetInParent()
        elif kind == "categorical":
            question.categorical.options.extend(["a", "b", "c", "d", "e"])
        else:
            question.numeric.min, question.numeric.max = 0.0, 40.0
        questions.append(question)
    return pb.CreateSurveyRequest(title=title, questions=questions, **extra)


def targets_of(survey: pb.Survey, seed: int) -> list[Target]:
    """Each question of ``survey`` with 40 valid report values (seeded)."""
    rng = np.random.default_rng(seed)
    targets = []
    for question in survey.questions:
        kind = question.WhichOneof("kind")
        truths: Any = (
            rng.integers(0, 2, 40).astype(bool)
            if kind == "binary"
            else rng.integers(0, len(question.categorical.options), 40)
            if kind == "categorical"
            else rng.uniform(question.numeric.min, question.numeric.max, 40)
        )
        mechanism = mechanism_of(question)
        values = mechanism.encode(mechanism.perturb_many(truths, rng))
        targets.append(Target(survey.id, question, values))
    return targets


def start_env(path: Path) -> Env:
    """A server on 127.0.0.1:0 over ``path`` with surveys of every kind and 10 reports a question.

    Surveys: ``yesno``, ``categorical`` (GRR, OUE, OLH), ``numeric`` (Laplace, Duchi,
    Piecewise, Hybrid), ``gated`` (min_reports 40), ``closed`` and ``enrolled`` (tokens
    required; no reports).
    """
    running = start_server(open_storage(f"sqlite:///{path}"), ADMIN_TOKEN, "127.0.0.1:0")
    channel = grpc.insecure_channel(
        running.address,
        options=[
            ("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", 64 << 20),
        ],
    )
    env = Env(
        running, channel, sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    )
    v = fs.VALID_MECHANISMS
    specs = {
        "yesno": survey_request("Yes/no", [("binary", m) for m in v["binary"]]),
        "categorical": survey_request("Choice", [("categorical", m) for m in v["categorical"]]),
        "numeric": survey_request("Numeric", [("numeric", m) for m in v["numeric"]]),
        "gated": survey_request("Gated", [("binary", v["binary"][0])], min_reports=40),
        "closed": survey_request(
            "Closed", [("binary", v["binary"][0]), ("categorical", v["categorical"][0])]
        ),
        "enrolled": survey_request(
            "Enrolled", [("binary", v["binary"][0])], enrollment_required=True
        ),
    }
    env.targets = {"open": [], "closed": [], "enrolled": []}
    for seed, (name, request) in enumerate(specs.items()):
        outcome = env.call("CreateSurvey", request)
        assert outcome.code == Code.OK, outcome.details
        survey = env.surveys[name] = pb.Survey.FromString(outcome.response)
        targets = targets_of(survey, seed)
        env.targets[name if name in ("closed", "enrolled") else "open"].extend(targets)
        if name != "enrolled":
            reports = [t.report(next(env.ids), i) for t in targets for i in range(10)]
            env.submit(reports)
            env.stored.update({r.report_id: r for r in reports if name != "closed"})
    closing = pb.CloseSurveyRequest(survey_id=env.surveys["closed"].id)
    assert env.call("CloseSurvey", closing).code == Code.OK
    return env


def stop_env(env: Env) -> None:
    """Close the channel and the reader, stop the server."""
    env.channel.close()
    env.db.close()
    env.running.stop(grace=1.0)
