"""The gRPC servicer: async handlers that run the service on worker threads and map errors."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from deniable.aggregator.server._admission import Admission
from deniable.aggregator.server._report_gate import ReportGate
from deniable.aggregator.server._service import AggregatorService, PreparedBatch
from deniable.aggregator.server._streaming import send_stream
from deniable.shared.errors import AggregatorError, InvalidArgument
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "ADMIN_AWARE",
    "DEADLINE_MARGIN_S",
    "INLINE_BYTES",
    "RAW_REQUESTS",
    "STREAMS",
    "AggregatorServicer",
    "DeadlinePassedError",
    "add_to_server",
    "error_status",
]

log = logging.getLogger("deniable.aggregator")
SERVICE = pb.DESCRIPTOR.services_by_name["Aggregator"]
# RPCs whose handler receives the request's bytes: the service validates them in bulk.
RAW_REQUESTS = frozenset({"SubmitReports"})
# A SubmitReports request up to this size (any usual batch: 10,000 yes/no reports are
# about 800 KB) is prepared on the event loop, a few milliseconds at most; a larger one on
# a worker thread.
INLINE_BYTES = 1024 * 1024
# Server-streaming RPCs: the service gives serialized responses, sent as they are.
STREAMS = frozenset({"ExportReports"})
# RPCs open to anyone whose answer depends on whether the call carries the admin token.
ADMIN_AWARE = frozenset({"GetSurvey", "ListSurveys", "GetEstimate"})
# Status details travel in a header, which gRPC caps at 16 KiB by default.
MAX_DETAILS = 2000
# A call with this little time left when a worker takes it up cannot be answered in time.
DEADLINE_MARGIN_S = 0.005
Response = TypeVar("Response")
Context = grpc.aio.ServicerContext[Any, Any]


class DeadlinePassedError(AggregatorError):
    """The caller's deadline passed while the call waited for a worker: nothing was done."""

    code = "DEADLINE_EXCEEDED"


class _BeforeDeadline(Executor):
    """The server's workers, for one call: work that waited past its deadline is not run.

    A call that waited for a worker until its deadline (nearly) passed aborts with
    DEADLINE_EXCEEDED and does nothing, since nobody waits for its answer.
    """

    def __init__(self, executor: Executor, context: Context, method: str) -> None:
        self.executor, self.context, self.method = executor, context, method

    def submit(self, fn: Callable[..., Response], /, *args: Any, **kwargs: Any) -> Future[Response]:
        def run() -> Response:
            _check_deadline(self.context, self.method)
            return fn(*args, **kwargs)

        return self.executor.submit(run)


def _check_deadline(context: Context, method: str) -> None:
    """DeadlinePassedError if the caller's deadline has (nearly) passed: nothing is done."""
    remaining = context.time_remaining()
    if remaining is not None and remaining <= DEADLINE_MARGIN_S:
        raise DeadlinePassedError(
            f"{method}: the caller's deadline passed before the call was handled; nothing done"
        )


def error_status(error: Exception, method: str) -> tuple[str, str]:
    """The status name (``grpc.StatusCode``'s) and message that end a failed call, logged.

    Both ports answer a failure with these: the gRPC port as its status, the web port as
    the Connect code of the same name.
    """
    if isinstance(error, AggregatorError):
        message = error.message
        if len(message) > MAX_DETAILS:  # never over gRPC's header limit, whatever is echoed
            message = f"{message[: MAX_DETAILS - 20]}... (message cut)"
        log.info("rejected", extra={"rpc": method, "code": error.code, "detail": message})
        return error.code, message
    log.error("internal error", exc_info=error, extra={"rpc": method})
    return "INTERNAL", "internal error; see the aggregator's log"


def _status(error: Exception, method: str) -> tuple[grpc.StatusCode, str]:
    """The status that ends a call that failed with ``error``, logged."""
    code, message = error_status(error, method)
    return grpc.StatusCode[code], message


async def _abort(context: Context, status: tuple[grpc.StatusCode, str]) -> NoReturn:
    """End the call with ``status``.

    Called outside any ``except`` block, with the failure already turned into a status:
    grpc.aio keeps the exception that ``abort`` raises, and a chained failure, whose
    traceback holds the frames that decoded the request, would keep the request's bytes
    alive until the cyclic garbage collector runs (a burst of refused batches then piles
    up in memory).
    """
    await context.abort(*status)


class AggregatorServicer:
    """Each RPC admits its request, then runs the service layer on a worker thread.

    The event loop only receives requests and sends replies, so a caller that opens a call
    and never sends its request holds no thread: it cannot starve the others. The
    service's work (decoding, SQLite, statistics) blocks, so it runs on ``executor``.
    ``admission`` caps the request bytes held at once (RESOURCE_EXHAUSTED beyond it);
    ``gate`` holds the free-space watermark and the per-peer report limit, and tells the
    calls that carry the admin token (:data:`ADMIN_AWARE` RPCs answer them in full).
    """

    def __init__(
        self,
        service: AggregatorService,
        executor: Executor,
        admission: Admission,
        gate: ReportGate | None = None,
    ) -> None:
        self.service = service
        self.executor = executor
        self.admission = admission
        self.gate = gate or ReportGate()
        self._preparing = threading.Lock()
        self._submitting = 0  # SubmitReports calls being handled (on the event loop)

    async def call(
        self, context: Context, method: str, size: int, work: Callable[[], Response]
    ) -> Response:
        """Run ``work`` on a worker unless the caller's deadline passed while it waited.

        A call that waited for a worker until its deadline (nearly) passed is not run: it
        aborts with DEADLINE_EXCEEDED and stores nothing, since nobody waits for its
        answer. Once the work runs, it runs to the end: a SubmitReports whose deadline
        passes during its commit is still committed, and the client's retry with the same
        report_ids is then acknowledged as already stored.
        """
        jobs = [work]
        del work  # only ``jobs`` holds the work (and its request), emptied below
        try:
            with self.admission.admit(method, size):
                return await self.on_worker(context, method, lambda: jobs.pop()())
        except Exception as error:  # every failure leaves through _abort with a status code
            status = _status(error, method)
        finally:
            jobs.clear()  # a refused call's frames outlive it, in its abort's traceback
        await _abort(context, status)

    async def on_worker(
        self, context: Context, method: str, work: Callable[[], Response]
    ) -> Response:
        """Run ``work`` on a worker; DeadlinePassedError if the deadline passed meanwhile."""
        # No local holds the future: a failed one holds its exception, whose traceback
        # holds this frame, a cycle that only the garbage collector would free.
        return await asyncio.wrap_future(
            _BeforeDeadline(self.executor, context, method).submit(work)
        )

    def handler(self, name: str, request_type: type[Message]) -> Callable[[bytes, Context], Any]:
        """The handler of RPC ``name``: admit, parse (unless raw), run the service method.

        A streaming RPC's service method returns an iterator of serialized responses,
        which the handler then writes one by one (:func:`send_stream`).
        """
        if name == "SubmitReports":
            return self.submit_reports
        method: Callable[[Any], Any] = getattr(self, f"_{name}")

        async def handle(data: bytes, context: Context) -> Any:
            request: Any = None
            size = len(data)
            try:
                try:
                    request = request_type.FromString(data)
                except DecodeError:
                    request = None
                if request is None:
                    full_name = request_type.DESCRIPTOR.full_name
                    invalid = InvalidArgument(f"request: not a valid {full_name}")
                    await _abort(context, _status(invalid, name))
                work = partial(method, request)
                if name in ADMIN_AWARE:
                    work = partial(work, self.gate.is_admin(context))
                response = await self.call(context, name, size, work)
            finally:  # a refused call's frames outlive it, in its abort's traceback
                del data, request
            if name not in STREAMS:
                return response
            try:
                await send_stream(context, self.executor, response)
            except Exception as error:  # a storage error mid-stream: the status ends it
                status = _status(error, name)
            else:
                return None
            await _abort(context, status)

        return handle

    async def submit_reports(self, data: bytes, context: Context) -> pb.SubmitReportsResponse:
        """SubmitReports: prepare the batch, then await its commit without holding a thread.

        A request up to :data:`INLINE_BYTES` (any usual batch) is decoded and validated on
        the event loop itself, which costs less than handing it to a worker and back; a
        larger one on a worker, one at a time (concurrent decoders only pass the
        interpreter back and forth). The prepared batch is queued for the storage's
        committer and the loop awaits its future: batches that arrive meanwhile share the
        next commit. A call that is the only SubmitReports being handled is committed
        on the loop at once when the committer is idle: with nothing else to do, the
        hand-over to the committer thread and back would only add to its latency.
        """
        method = "SubmitReports"
        size = len(data)
        prepared: PreparedBatch | None = None
        self._submitting += 1
        try:
            with self.admission.admit(method, size):
                self.gate.before_decoding()
                if size <= INLINE_BYTES:
                    _check_deadline(context, method)
                    prepared = self.service.prepare_reports(data)
                else:
                    jobs = [data]
                    prepared = await self.on_worker(
                        context, method, lambda: self._prepare(jobs.pop())
                    )
                data = b""
                submission = prepared.submission
                reports = len(submission.report_ids) + prepared.repeats
                self.gate.charge(context, reports, submission.token_hash is not None)
                workers = _BeforeDeadline(self.executor, context, method)
                alone = self._submitting == 1
                outcome = await asyncio.wrap_future(  # no local holds it (see on_worker)
                    self.service.store_reports(prepared, workers, alone=alone)
                )
        except Exception as error:  # every failure leaves through _abort with a status code
            status = _status(error, method)
        else:
            assert prepared is not None
            response = prepared.response(outcome)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "reports stored",
                    extra={"stored": response.stored, "already_stored": response.already_stored},
                )
            return response
        finally:
            self._submitting -= 1
            data, prepared = b"", None  # a refused call's frames outlive it (its abort)
        await _abort(context, status)

    def _prepare(self, data: bytes) -> PreparedBatch:
        with self._preparing:
            return self.service.prepare_reports(data)

    # The service calls, one per RPC (run on a worker thread).

    def _CreateSurvey(self, request: pb.CreateSurveyRequest) -> pb.Survey:  # noqa: N802
        survey = self.service.create_survey(request)
        log.info(
            "survey created", extra={"survey_id": survey.id, "questions": len(survey.questions)}
        )
        return survey

    def _GetSurvey(self, request: pb.GetSurveyRequest, admin: bool) -> pb.Survey:  # noqa: N802
        return self.service.get_survey(request.survey_id, admin=admin)

    def _ListSurveys(  # noqa: N802
        self, request: pb.ListSurveysRequest, admin: bool
    ) -> pb.ListSurveysResponse:
        return self.service.list_surveys(request, admin=admin)

    def _CloseSurvey(self, request: pb.CloseSurveyRequest) -> pb.Survey:  # noqa: N802
        survey = self.service.close_survey(request.survey_id)
        log.info("survey closed", extra={"survey_id": survey.id})
        return survey

    def _GetEstimate(self, request: pb.GetEstimateRequest, admin: bool) -> pb.Estimate:  # noqa: N802
        return self.service.get_estimate(request, admin=admin)

    def _IssueTokens(self, request: pb.IssueTokensRequest) -> pb.IssueTokensResponse:  # noqa: N802
        response = self.service.issue_tokens(request)  # never logs the tokens
        log.info(
            "tokens issued", extra={"survey_id": response.survey_id, "count": len(response.tokens)}
        )
        return response

    def _ExportReports(self, request: pb.ExportReportsRequest) -> Iterator[bytes]:  # noqa: N802
        chunks = self.service.export_reports(request.survey_id)  # NotFound before any read
        log.info("export started", extra={"survey_id": request.survey_id})
        return chunks


def add_to_server(servicer: AggregatorServicer, server: grpc.aio.Server) -> None:
    """Register the Aggregator service like the generated code, but parsing requests itself.

    A batch of reports reaches :meth:`AggregatorService.prepare_reports` as the bytes
    received, so that it is parsed once, in bulk, instead of into a message per report;
    an export's chunks are sent as the bytes the service joined from stored batches.
    Every other request is parsed by the handler, so that bytes that do not parse are
    refused with INVALID_ARGUMENT (grpcio's own deserializer would answer INTERNAL).
    """
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in SERVICE.methods:
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        handle = servicer.handler(method.name, request_type)
        if method.name in STREAMS:  # the service's chunks are serialized responses already
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                handle, request_deserializer=None, response_serializer=None
            )
            continue
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=None, response_serializer=response_type.SerializeToString
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),)
    )
