"""The gRPC servicer: a thin layer that maps domain errors to status codes in one place."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from deniable.aggregator.server._service import AggregatorService
from deniable.shared.errors import AggregatorError, InvalidArgument
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["RAW_REQUESTS", "AggregatorServicer", "add_to_server"]

log = logging.getLogger("deniable.aggregator")
SERVICE = pb.DESCRIPTOR.services_by_name["Aggregator"]
# RPCs whose handler receives the request's bytes: the service validates them in bulk.
RAW_REQUESTS = frozenset({"SubmitReports"})
# Status details travel in a header, which gRPC caps at 16 KiB by default.
MAX_DETAILS = 2000
# A call with this little time left when its handler starts cannot be answered in time.
DEADLINE_MARGIN_S = 0.005
Request = TypeVar("Request")
Response = TypeVar("Response")


def _abort(context: grpc.ServicerContext, error: Exception, method: str) -> NoReturn:
    if isinstance(error, AggregatorError):
        message = error.message
        if len(message) > MAX_DETAILS:  # never over gRPC's header limit, whatever is echoed
            message = f"{message[: MAX_DETAILS - 20]}... (message cut)"
        log.info("rejected", extra={"rpc": method, "code": error.code, "detail": message})
        context.abort(grpc.StatusCode[error.code], message)
    log.exception("internal error", extra={"rpc": method})
    context.abort(grpc.StatusCode.INTERNAL, "internal error; see the aggregator's log")


def _call(
    context: grpc.ServicerContext,
    method: str,
    handler: Callable[[Request], Response],
    request: Request,
) -> Response:
    """Run ``handler`` unless the caller's deadline has passed; map every failure to a status.

    A call that waited for a worker until its deadline (nearly) passed is not run: it
    aborts with DEADLINE_EXCEEDED and stores nothing, since nobody waits for its answer.
    Once a handler runs, it runs to the end: a SubmitReports whose deadline passes during
    its commit is still committed, and the client's retry with the same report_ids is
    then acknowledged as already stored.
    """
    remaining = context.time_remaining()
    if remaining is not None and remaining <= DEADLINE_MARGIN_S:
        log.info("deadline passed before the call ran", extra={"rpc": method})
        context.abort(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"{method}: the caller's deadline passed before the call was handled; nothing done",
        )
    try:
        return handler(request)
    except Exception as error:  # every failure leaves through _abort with a status code
        _abort(context, error, method)


class AggregatorServicer:
    """Each RPC calls the service layer; nothing else happens here (see :func:`add_to_server`)."""

    def __init__(self, service: AggregatorService) -> None:
        self.service = service

    def CreateSurvey(  # noqa: N802 - the RPC names of the service
        self, request: pb.CreateSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Create a survey (admin)."""
        survey = _call(context, "CreateSurvey", self.service.create_survey, request)
        log.info(
            "survey created", extra={"survey_id": survey.id, "questions": len(survey.questions)}
        )
        return survey

    def GetSurvey(  # noqa: N802
        self, request: pb.GetSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """One survey."""
        return _call(context, "GetSurvey", self.service.get_survey, request.survey_id)

    def ListSurveys(  # noqa: N802
        self, request: pb.ListSurveysRequest, context: grpc.ServicerContext
    ) -> pb.ListSurveysResponse:
        """All (open) surveys."""
        return _call(context, "ListSurveys", self.service.list_surveys, request)

    def CloseSurvey(  # noqa: N802
        self, request: pb.CloseSurveyRequest, context: grpc.ServicerContext
    ) -> pb.Survey:
        """Close a survey (admin)."""
        survey = _call(context, "CloseSurvey", self.service.close_survey, request.survey_id)
        log.info("survey closed", extra={"survey_id": survey.id})
        return survey

    def SubmitReports(  # noqa: N802
        self, request: bytes, context: grpc.ServicerContext
    ) -> pb.SubmitReportsResponse:
        """Store a batch of reports durably (``request`` is the serialized message)."""
        response = _call(context, "SubmitReports", self.service.submit_reports, request)
        log.debug(
            "reports stored",
            extra={"stored": response.stored, "already_stored": response.already_stored},
        )
        return response

    def GetEstimate(  # noqa: N802
        self, request: pb.GetEstimateRequest, context: grpc.ServicerContext
    ) -> pb.Estimate:
        """The estimate for one question."""
        return _call(context, "GetEstimate", self.service.get_estimate, request)

    def IssueTokens(  # noqa: N802
        self, request: pb.IssueTokensRequest, context: grpc.ServicerContext
    ) -> pb.IssueTokensResponse:
        """Issue one-time enrollment tokens (admin). Never logs the tokens."""
        response = _call(context, "IssueTokens", self.service.issue_tokens, request)
        log.info(
            "tokens issued", extra={"survey_id": response.survey_id, "count": len(response.tokens)}
        )
        return response


def _parsing(
    name: str, request_type: type[Message], rpc: Callable[[Any, grpc.ServicerContext], Any]
) -> Callable[[bytes, grpc.ServicerContext], Any]:
    """``rpc`` behind a parser that answers INVALID_ARGUMENT to bytes that do not parse.

    (grpcio's own deserializer would turn them into INTERNAL.)
    """

    def handler(data: bytes, context: grpc.ServicerContext) -> Any:
        try:
            request = request_type.FromString(data)
        except DecodeError:
            full_name = request_type.DESCRIPTOR.full_name
            _abort(context, InvalidArgument(f"request: not a valid {full_name}"), name)
        return rpc(request, context)

    return handler


def add_to_server(servicer: AggregatorServicer, server: grpc.Server) -> None:
    """Register the Aggregator service like the generated code, but parsing requests itself.

    A batch of reports reaches :meth:`AggregatorService.submit_reports` as the bytes
    received, so that it is parsed once, in bulk, instead of into a message per report.
    Every other request is parsed here, so that bytes that do not parse are refused with
    INVALID_ARGUMENT.
    """
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in SERVICE.methods:
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        rpc = getattr(servicer, method.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            rpc if method.name in RAW_REQUESTS else _parsing(method.name, request_type, rpc),
            request_deserializer=None,
            response_serializer=response_type.SerializeToString,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),)
    )
    server.add_registered_method_handlers(SERVICE.full_name, handlers)
