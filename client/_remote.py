"""A gRPC client for the aggregator, with bounded retries for idempotent calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

import grpc

from deniable.shared.transport import (
    LARGEST_MESSAGE_BYTES,
    MAX_MESSAGE_BYTES,
    RETRYABLE,
    RemoteError,
    TlsConfig,
    open_channel,
    parse_target,
    worth_retrying,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from deniable.shared.wire.v1 import aggregator_pb2_grpc as pb_grpc

__all__ = ["RETRYABLE", "AggregatorClient", "RemoteError"]

Response = TypeVar("Response")


class AggregatorClient:
    """Calls the ``deniable.v1.Aggregator`` service at ``target``.

    ``target`` is ``HOST:PORT`` or names several daemons of one aggregator (gRPC's
    ``dns:///HOST:PORT``, ``ipv4:A:P,B:P``, ``ipv6:[A]:P,...``): calls then go round-robin
    to the daemons that accept connections, and a call that failed on one that died is
    retried (when it may be) on another.

    Idempotent calls (reads, CloseSurvey, SubmitReports, which is idempotent per
    report_id) are retried on UNAVAILABLE and DEADLINE_EXCEEDED, at most ``attempts``
    times with exponential backoff; CreateSurvey and IssueTokens are never retried. With
    ``tls`` the channel is TLS (mutual TLS when it holds a client certificate), else
    plaintext; a failed handshake is UNAVAILABLE, and not retried (a certificate that
    does not verify fails the same way every time).

    Replies are at most 8 MiB, except for a client holding ``admin_token``: it trusts
    the aggregator it administers, and accepts gRPC's largest message, so that an
    export receives any stored batch, whatever ``--max-message-bytes`` it came under.
    """

    def __init__(
        self,
        target: str,
        *,
        admin_token: str | None = None,
        timeout: float = 10.0,
        attempts: int = 4,
        backoff: float = 0.25,
        sleep: Callable[[float], None] = time.sleep,
        tls: TlsConfig | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        parsed = parse_target(target)  # TargetError (a ValueError) naming a bad target
        self.target = target
        self._token = admin_token
        self._timeout = timeout
        self._attempts = attempts
        self._backoff = backoff
        self._sleep = sleep
        self.tls = tls
        self._channel = open_channel(
            target,
            tls,
            MAX_MESSAGE_BYTES,
            balanced=parsed.balanced,
            max_receive_bytes=None if admin_token is None else LARGEST_MESSAGE_BYTES,
        )
        self.stub = pb_grpc.AggregatorStub(self._channel)

    def __enter__(self) -> AggregatorClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def _metadata(self, admin: bool) -> tuple[tuple[str, str], ...] | None:
        if admin and self._token:
            return (("authorization", f"Bearer {self._token}"),)
        return None

    def _call(
        self,
        method: Callable[..., Response],
        request: Any,
        *,
        admin: bool = False,
        retry: bool = True,
    ) -> Response:
        metadata = self._metadata(admin)
        attempts = self._attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return method(request, timeout=self._timeout, metadata=metadata)
            except grpc.RpcError as error:
                code: grpc.StatusCode = error.code()
                details: str = error.details() or code.name
                if attempt < attempts and worth_retrying(code, details):
                    self._sleep(self._backoff * 2 ** (attempt - 1))
                    continue
                raise RemoteError(code, details, attempt) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def create_survey(
        self,
        title: str,
        questions: Sequence[pb.Question],
        *,
        min_reports: int = 0,
        enrollment_required: bool = False,
        release_step: int = 0,
        max_reports: int = 0,
    ) -> pb.Survey:
        """Create a survey (admin token needed). Not retried: it is not idempotent.

        ``release_step`` > 0 releases estimates in steps of at least that many reports per
        question, which gives them a central (ε, δ) (see ``Survey.release_step``);
        ``max_reports`` > 0 caps the reports the survey stores (``Survey.max_reports``).
        """
        request = pb.CreateSurveyRequest(
            title=title,
            questions=questions,
            min_reports=min_reports,
            enrollment_required=enrollment_required,
            release_step=release_step,
            max_reports=max_reports,
        )
        return self._call(self.stub.CreateSurvey, request, admin=True, retry=False)

    def get_survey(self, survey_id: str) -> pb.Survey:
        """One survey (with the admin token, if held: a stepped survey's live count)."""
        request = pb.GetSurveyRequest(survey_id=survey_id)
        return self._call(self.stub.GetSurvey, request, admin=True)

    def list_surveys(self, include_closed: bool = False) -> list[pb.Survey]:
        """Open surveys (all with ``include_closed``, which needs the admin token).

        The admin token, if held, is sent: the aggregator then shows stepped surveys'
        live report counts too.
        """
        request = pb.ListSurveysRequest(include_closed=include_closed)
        return list(self._call(self.stub.ListSurveys, request, admin=True).surveys)

    def close_survey(self, survey_id: str) -> pb.Survey:
        """Close a survey (admin token needed)."""
        request = pb.CloseSurveyRequest(survey_id=survey_id)
        return self._call(self.stub.CloseSurvey, request, admin=True)

    def submit_reports(
        self, reports: Sequence[pb.Report], enrollment_token: str | None = None
    ) -> pb.SubmitReportsResponse:
        """Submit a batch; safe to retry because report_ids make it idempotent.

        ``enrollment_token`` is required by surveys with ``enrollment_required``; the same
        batch resent with the same token is acknowledged as already stored, so retries
        stay safe. A client holding the admin token sends it: the operator's own loads
        are not held to the per-peer report limit.
        """
        request = pb.SubmitReportsRequest(reports=reports, enrollment_token=enrollment_token or "")
        return self._call(self.stub.SubmitReports, request, admin=True)

    def issue_tokens(self, survey_id: str, count: int) -> list[str]:
        """Issue ``count`` enrollment tokens (admin token needed); shown once, never stored.

        Not retried: a retry after a lost reply would issue a second set.
        """
        request = pb.IssueTokensRequest(survey_id=survey_id, count=count)
        response = self._call(self.stub.IssueTokens, request, admin=True, retry=False)
        return list(response.tokens)

    def export_reports(self, survey_id: str) -> Iterator[pb.ExportReportsResponse]:
        """Every stored report of a survey, open or closed (admin token needed), streamed.

        Each message holds whole stored batches, about 1 MiB of them (a larger batch
        comes alone); together they hold every report the survey had stored when the
        export began, each once, as stored (randomized, never a token), in commit order.
        Reports stored meanwhile are in the next export. Memory stays flat on both sides
        however many reports there are: a message is fetched as the loop asks for it.

        The call starts at the first ``next()``. It has no deadline (an export of
        millions of reports takes as long as it takes; keepalive finds a dead
        connection). A failure before the first message is retried like the other reads;
        one after it raises :class:`RemoteError` (start the export again: it holds every
        report again). Closing the iterator, or dropping it as leaving a ``for`` loop
        early does, cancels the call, and the aggregator stops reading.

        Raises:
            RemoteError: NOT_FOUND for an unknown survey, UNAUTHENTICATED without the
                right admin token, UNAVAILABLE when the aggregator or its database
                cannot be reached.
        """
        request = pb.ExportReportsRequest(survey_id=survey_id)
        metadata = self._metadata(admin=True)
        for attempt in range(1, self._attempts + 1):
            call = self.stub.ExportReports(request, metadata=metadata)
            received = False
            try:
                for response in call:
                    received = True
                    yield response
                return
            except grpc.RpcError as error:
                code: grpc.StatusCode = error.code()
                details: str = error.details() or code.name
                if not received and attempt < self._attempts and worth_retrying(code, details):
                    self._sleep(self._backoff * 2 ** (attempt - 1))
                    continue
                raise RemoteError(code, details, attempt) from None
            finally:
                call.cancel()  # a no-op once the stream ended; else the server stops reading

    def get_estimate(
        self,
        survey_id: str,
        question_id: str,
        confidence: float = 0.95,
        method: str = "",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
        central_delta: float = 0.0,
        given: str = "",
        item: str = "",
    ) -> pb.Estimate:
        """The estimate for one question (see ``GetEstimateRequest`` for the options).

        The admin token, if held, is sent: a stepped question's ``stored`` is then its
        live count (else the count its release is from, ``stored_as_released``).
        """
        request = pb.GetEstimateRequest(
            given=given,
            item=item,
            survey_id=survey_id,
            question_id=question_id,
            confidence=confidence,
            method=method,
            simultaneous=simultaneous,
            anytime=anytime,
            central_delta=central_delta,
        )
        return self._call(self.stub.GetEstimate, request, admin=True)
