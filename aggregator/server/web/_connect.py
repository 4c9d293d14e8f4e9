"""The participant's RPCs over the Connect protocol (connectrpc), on the gRPC port's service."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from deniable.aggregator.server._admission import Admission
from deniable.aggregator.server._report_gate import ReportGate
from deniable.aggregator.server._service import AggregatorService, PreparedBatch
from deniable.aggregator.server._servicer import (
    DEADLINE_MARGIN_S,
    DeadlinePassedError,
    error_status,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

if TYPE_CHECKING:
    from connectrpc._server_shared import EndpointUnary

__all__ = ["SERVICE_PATH", "ParticipantRpcs", "RawBatch", "connect_app"]

log = logging.getLogger("deniable.aggregator")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Aggregator"].full_name
SERVICE_PATH = f"/{SERVICE_NAME}"
Response = TypeVar("Response")
Handler = Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]]
# A gRPC status name as Connect spells it (the rest are the names in lower case).
_CONNECT_NAMES = {"CANCELLED": "canceled"}


@dataclass(frozen=True)
class RawBatch:
    """A SubmitReportsRequest as its serialized bytes, which the service validates in bulk.

    The binary codec hands the body over as it came, as the gRPC port does; the JSON
    codec parses it and serializes the message, so that both reach the same decoder.
    """

    data: bytes


def _invalid(message_class: type[Any], detail: str = "") -> ConnectError:
    name = (pb.SubmitReportsRequest if message_class is RawBatch else message_class).DESCRIPTOR
    return ConnectError(Code.INVALID_ARGUMENT, f"request: not a valid {name.full_name}{detail}")


class ProtoCodec:
    """``application/proto``: google.protobuf messages; a batch stays bytes."""

    def name(self) -> str:
        """The codec's name, the content type's subtype."""
        return "proto"

    def encode(self, message: Message) -> bytes:
        """The message's wire bytes."""
        return message.SerializeToString()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        """Parse a request; bytes that do not parse are INVALID_ARGUMENT, as on gRPC."""
        if message_class is RawBatch:
            return RawBatch(bytes(data))
        try:
            return message_class.FromString(bytes(data))
        except DecodeError:
            raise _invalid(message_class) from None


class JsonCodec:
    """``application/json``: the protobuf JSON mapping (unknown fields ignored, as in binary)."""

    def name(self) -> str:
        """The codec's name, the content type's subtype."""
        return "json"

    def encode(self, message: Message) -> bytes:
        """The message as compact JSON."""
        return json.dumps(json_format.MessageToDict(message), separators=(",", ":")).encode()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        """Parse a request; text that does not parse is INVALID_ARGUMENT naming why."""
        target = pb.SubmitReportsRequest if message_class is RawBatch else message_class
        message = target()
        try:
            json_format.Parse(bytes(data), message, ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError, RecursionError) as error:
            raise _invalid(message_class, f" in JSON: {str(error)[:200]}") from None
        if message_class is RawBatch:
            return RawBatch(message.SerializeToString())
        return message


def _method(name: str, request: type[Any], response: type[Any]) -> MethodInfo[Any, Any]:
    return MethodInfo(
        name=name,
        service_name=SERVICE_NAME,
        input=request,
        output=response,
        idempotency_level=IdempotencyLevel.UNKNOWN,  # POST only: no Connect GET
        stream_type=StreamType.UNARY,
    )


def peer_of(context: RequestContext[Any, Any]) -> str:
    """The caller as gRPC writes a peer (``ipv4:A:P``, ``ipv6:[A]:P``): one bucket on both ports."""
    address = context.client_address or "unknown:0"
    host, _, port = address.rpartition(":")
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class ParticipantRpcs:
    """GetSurvey, ListSurveys and SubmitReports as the gRPC port answers a caller without token.

    Each call is admitted by the daemon's :class:`Admission` (request bytes in flight,
    shared with the gRPC port) and its work runs on the daemon's workers, never on the
    web port's event loop; a batch passes the same :class:`ReportGate` (watermark, then
    the peer's bucket, shared too). No call here is an admin's: an ``authorization``
    header is never read.
    """

    def __init__(
        self,
        service: AggregatorService,
        executor: Executor,
        admission: Admission,
        gate: ReportGate,
    ) -> None:
        self.service = service
        self.executor = executor
        self.admission = admission
        self.gate = gate
        self._preparing = threading.Lock()

    async def call(
        self, name: str, size: int, context: RequestContext[Any, Any], work: Callable[[], Response]
    ) -> Response:
        """Run ``work`` admitted, on a worker; a failure becomes the gRPC port's status."""
        return await self._answer(name, size, lambda: self._on_worker(name, context, work))

    async def _answer(
        self, name: str, size: int, run: Callable[[], Awaitable[Response]]
    ) -> Response:
        try:
            with self.admission.admit(name, size):
                return await run()
        except Exception as error:  # every failure leaves with the gRPC port's status
            code, message = error_status(error, name)
        raise ConnectError(Code(_CONNECT_NAMES.get(code, code.lower())), message)

    async def _on_worker(
        self, name: str, context: RequestContext[Any, Any], work: Callable[[], Response]
    ) -> Response:
        """Run ``work`` on a worker unless the caller's deadline passed while it waited."""

        def run() -> Response:
            remaining = context.timeout_ms
            if remaining is not None and remaining <= DEADLINE_MARGIN_S * 1000:
                raise DeadlinePassedError(
                    f"{name}: the caller's deadline passed before the call was handled; "
                    "nothing done"
                )
            return work()

        return await asyncio.wrap_future(self.executor.submit(run))

    async def get_survey(
        self, request: pb.GetSurveyRequest, context: RequestContext[Any, Any]
    ) -> pb.Survey:
        """GetSurvey, as shown to a caller without the admin token."""
        size = request.ByteSize()
        return await self.call(
            "GetSurvey", size, context, lambda: self.service.get_survey(request.survey_id)
        )

    async def list_surveys(
        self, request: pb.ListSurveysRequest, context: RequestContext[Any, Any]
    ) -> pb.ListSurveysResponse:
        """ListSurveys: open surveys only (``include_closed`` is UNAUTHENTICATED here)."""
        size = request.ByteSize()
        return await self.call(
            "ListSurveys", size, context, lambda: self.service.list_surveys(request)
        )

    async def submit_reports(
        self, request: RawBatch, context: RequestContext[Any, Any]
    ) -> pb.SubmitReportsResponse:
        """SubmitReports: the watermark, the decoder and the peer's bucket, then the commit.

        The batch is prepared on a worker; the commit is awaited on the loop, no thread
        waiting for it, and shielded: a caller that goes away (or whose deadline passes)
        does not cancel a commit under way, whose outcome a retry then reads as
        already stored.
        """
        name = "SubmitReports"

        async def run() -> pb.SubmitReportsResponse:
            peer = peer_of(context)
            prepared = await self._on_worker(name, context, lambda: self._prepare(request, peer))
            stored = self.service.store_reports(prepared, self.executor)
            outcome = await asyncio.shield(asyncio.wrap_future(stored))
            return prepared.response(outcome)

        return await self._answer(name, len(request.data), run)

    def _prepare(self, request: RawBatch, peer: str) -> PreparedBatch:
        """On a worker: the watermark, then decode and check the batch, then charge the peer."""
        self.gate.before_decoding()
        with self._preparing:  # one decoder at a time (they would only trade the interpreter)
            prepared = self.service.prepare_reports(request.data)
        submission = prepared.submission
        reports = len(submission.report_ids) + prepared.repeats
        self.gate.charge_peer(peer, reports, submission.token_hash is not None)
        return prepared

    def endpoints(self) -> Mapping[str, EndpointUnary[Any, Any]]:
        """The three routes, by path; every other path of the service is not found."""
        handlers: dict[str, tuple[type[Any], type[Any], Handler]] = {
            "GetSurvey": (pb.GetSurveyRequest, pb.Survey, self.get_survey),
            "ListSurveys": (pb.ListSurveysRequest, pb.ListSurveysResponse, self.list_surveys),
            "SubmitReports": (RawBatch, pb.SubmitReportsResponse, self.submit_reports),
        }
        return {
            f"{SERVICE_PATH}/{name}": Endpoint.unary(_method(name, request, response), handler)
            for name, (request, response, handler) in handlers.items()
        }


class _Application(ConnectASGIApplication[ParticipantRpcs]):
    @property
    def path(self) -> str:
        return SERVICE_PATH


def connect_app(rpcs: ParticipantRpcs, max_message_bytes: int) -> ConnectASGIApplication[Any]:
    """The ASGI application of the participant's RPCs (Connect unary, JSON and binary).

    No compression (a request's size is what it sends; nothing secret is compressed
    beside what a caller chose), and a body beyond ``max_message_bytes`` is refused as
    it is read.
    """
    return _Application(
        service=rpcs,
        endpoints=lambda rpcs: rpcs.endpoints(),
        read_max_bytes=max_message_bytes,
        compressions=(),
        codecs=[ProtoCodec(), JsonCodec()],
    )
