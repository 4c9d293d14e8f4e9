"""The gRPC servicer: a thin layer that maps domain errors to status codes in one place."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NoReturn, TypeVar

import grpc

from aggregator._errors import AggregatorError
from aggregator._service import AggregatorService
from shared.deniable.v1 import aggregator_pb2 as pb
from shared.deniable.v1 import aggregator_pb2_grpc as pb_grpc

__all__ = ["AggregatorServicer"]

log = logging.getLogger("deniable.aggregator")
Request = TypeVar("Request")
Response = TypeVar("Response")


def _abort(context: grpc.ServicerContext, error: Exception, method: str) -> NoReturn:
    if isinstance(error, AggregatorError):
        log.info("rejected", extra={"rpc": method, "code": error.code, "detail": error.message})
        context.abort(grpc.StatusCode[error.code], error.message)
    log.exception("internal error", extra={"rpc": method})
    context.abort(grpc.StatusCode.INTERNAL, "internal error; see the aggregator's log")


def _call(
    context: grpc.ServicerContext,
    method: str,
    handler: Callable[[Request], Response],
    request: Request,
) -> Response:
    try:
        return handler(request)
    except Exception as error:  # every failure leaves through _abort with a status code
        _abort(context, error, method)


class AggregatorServicer(pb_grpc.AggregatorServicer):
    """Each RPC calls the service layer; nothing else happens here."""

    def __init__(self, service: AggregatorService) -> None:
        self.service = service

    def CreateSurvey(  # noqa: N802 - names fixed by the generated base class
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
        self, request: pb.SubmitReportsRequest, context: grpc.ServicerContext
    ) -> pb.SubmitReportsResponse:
        """Store a batch of reports durably."""
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
