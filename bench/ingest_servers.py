"""The ingest benchmark's two servers (the aggregator and a bare grpcio one) and its requests."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import random
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import NoReturn

import grpc

from deniable.aggregator.server._lifecycle import MAX_MESSAGE_BYTES, start_server
from deniable.aggregator.storage import open_storage
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

REAL = "real"
BARE = "bare"
ALPHA = 0.5
QUESTION_ID = "cheated"
CATEGORICAL_ID = "commute"
NUMERIC_ID = "hours"
OPTIONS = ("walk", "bike", "bus", "train", "car", "tram", "ferry", "other")
DUCHI_BOUND = 2.1639534137386529  # (e + 1) / (e - 1): Duchi et al.'s mechanism at ε = 1
YESNO = "yes/no"
MIXED = "mixed"
ADMIN_TOKEN = "bench-admin-token"
MAX_WORKERS = 16  # start_server's default thread pool
CALL_TIMEOUT = 60.0  # seconds, per RPC
SERVER_LIFETIME = 900.0  # a server subprocess exits on its own after this many seconds
STARTUP_TIMEOUT = 60.0


# --- the two servers -------------------------------------------------------------------


def _unimplemented(context: grpc.ServicerContext) -> NoReturn:
    context.abort(grpc.StatusCode.UNIMPLEMENTED, "the bare baseline only takes SubmitReports")


class BareServicer(pb_grpc.AggregatorServicer):
    """Receives SubmitReports like the real service, then discards the reports."""

    def CreateSurvey(  # noqa: N802 - names fixed by the generated base class
        self, request: pb.CreateSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def GetSurvey(  # noqa: N802
        self, request: pb.GetSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def ListSurveys(  # noqa: N802
        self, request: pb.ListSurveysRequest, context: grpc.ServicerContext
    ) -> pb.ListSurveysResponse:
        """Not part of the baseline."""
        _unimplemented(context)

    def CloseSurvey(  # noqa: N802
        self, request: pb.CloseSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Not part of the baseline."""
        _unimplemented(context)

    def GetEstimate(  # noqa: N802
        self, request: pb.GetEstimateRequest, context: grpc.ServicerContext
    ) -> pb.Estimate:
        """Not part of the baseline."""
        _unimplemented(context)

    def IssueTokens(  # noqa: N802
        self, request: pb.IssueTokensRequest, context: grpc.ServicerContext
    ) -> pb.IssueTokensResponse:
        """Not part of the baseline."""
        _unimplemented(context)

    def ExportReports(  # noqa: N802
        self, request: pb.ExportReportsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ExportReportsResponse]:
        """Not part of the baseline."""
        _unimplemented(context)

    def SubmitReports(  # noqa: N802
        self, request: pb.SubmitReportsRequest, context: grpc.ServicerContext
    ) -> pb.SubmitReportsResponse:
        """Acknowledge every report without looking at it."""
        return pb.SubmitReportsResponse(stored=len(request.reports))


def start_bare_server() -> tuple[grpc.Server, int]:
    """A grpcio server with the Aggregator service and start_server's pool and limits."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="rpc"),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=MAX_WORKERS * 8,
    )
    pb_grpc.add_AggregatorServicer_to_server(BareServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    if port == 0:
        raise OSError("cannot listen on 127.0.0.1:0")
    server.start()
    return server, port


def start_in_process(kind: str, db_url: str) -> tuple[int, Callable[[], None]]:
    """Start the real or the bare server in this process: its port and a stop function."""
    if kind == REAL:
        running = start_server(open_storage(db_url), ADMIN_TOKEN, "127.0.0.1:0")
        return running.port, functools.partial(running.stop, 2.0)
    server, port = start_bare_server()

    def stop() -> None:
        server.stop(2.0).wait(10.0)

    return port, stop


def _serve_child(kind: str, db_url: str, conn: Connection) -> None:
    port, stop = start_in_process(kind, db_url)
    conn.send(port)
    with contextlib.suppress(EOFError, OSError):
        conn.poll(SERVER_LIFETIME)  # any message, or the parent going away, means stop
    stop()


@dataclass
class ServerHandle:
    """A running server (in this process or a child) and how to stop it."""

    name: str
    port: int
    stop: Callable[[], None]

    @property
    def address(self) -> str:
        """Loopback address of the server."""
        return f"127.0.0.1:{self.port}"


def start_subprocess(kind: str, db_url: str) -> ServerHandle:
    """Start a server in a spawned child process, so it does not share the client's GIL."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve_child, args=(kind, db_url, child), daemon=True)
    process.start()
    child.close()
    if not parent.poll(STARTUP_TIMEOUT):
        process.kill()
        raise RuntimeError(f"{kind} server did not start within {STARTUP_TIMEOUT:.0f} s")
    port = int(parent.recv())

    def stop() -> None:
        with contextlib.suppress(OSError):
            parent.send("stop")
        process.join(20.0)
        if process.is_alive():
            process.kill()
            process.join(5.0)
        parent.close()

    return ServerHandle(kind, port, stop)


def start(kind: str, db_url: str, in_process: bool) -> ServerHandle:
    """Start one server with the chosen arrangement (the same for both servers)."""
    if in_process:
        port, stop = start_in_process(kind, db_url)
        return ServerHandle(kind, port, stop)
    return start_subprocess(kind, db_url)


# --- requests --------------------------------------------------------------------------


def binary_question() -> pb.Question:
    """The survey's one yes/no question, randomized response at α = 0.5."""
    return pb.Question(
        id=QUESTION_ID,
        text="Have you ever cheated in an exam?",
        binary=pb.BinaryQuestion(),
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=ALPHA)),
    )


def survey_questions() -> list[pb.Question]:
    """The benchmark survey: a yes/no, a multiple-choice and a numeric question."""
    return [
        binary_question(),
        pb.Question(
            id=CATEGORICAL_ID,
            text="How do you get to work?",
            categorical=pb.CategoricalQuestion(options=OPTIONS),
            mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=ALPHA)),
        ),
        pb.Question(
            id=NUMERIC_ID,
            text="Hours of sleep last night?",
            numeric=pb.NumericQuestion(min=0.0, max=16.0),
            mechanism=pb.Mechanism(duchi=pb.Duchi(bound=DUCHI_BOUND)),
        ),
    ]


def _report(rng: random.Random, survey_id: str, kind: int) -> pb.Report:
    """A valid randomized report: yes/no (0), multiple choice (1) or numeric (2)."""
    question = survey_questions()[kind] if kind else None
    report = pb.Report(report_id=f"{rng.getrandbits(128):032x}", survey_id=survey_id)
    if question is None:
        report.question_id = QUESTION_ID
        report.mechanism.randomized_response.alpha = ALPHA
        report.bit = rng.getrandbits(1) == 1
    elif kind == 1:
        # option_fixed, as the client sends it: 4 bytes whatever the option
        report.question_id, report.option_fixed = CATEGORICAL_ID, rng.randrange(len(OPTIONS))
        report.mechanism.CopyFrom(question.mechanism)
    else:  # Duchi et al.: every report is +bound or -bound
        report.question_id, report.number = NUMERIC_ID, rng.choice((DUCHI_BOUND, -DUCHI_BOUND))
        report.mechanism.CopyFrom(question.mechanism)
    return report


def build_requests(
    rng: random.Random, survey_id: str, batch: int, count: int, traffic: str = YESNO
) -> list[pb.SubmitReportsRequest]:
    """``count`` requests of ``batch`` reports each, every report_id fresh (32 hex chars).

    Yes/no traffic answers the yes/no question only; mixed traffic interleaves the three
    questions' reports in every batch (report i answers question i mod 3).
    """
    kinds = 3 if traffic == MIXED else 1
    return [
        pb.SubmitReportsRequest(reports=[_report(rng, survey_id, i % kinds) for i in range(batch)])
        for _ in range(count)
    ]
