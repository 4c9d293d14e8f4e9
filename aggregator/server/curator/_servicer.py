"""The Curator servicer: authenticate, run the service, map its errors to gRPC statuses."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from deniable.aggregator.central.curator import CuratorError
from deniable.aggregator.central.curator.ledger import BudgetExceededError, LedgerUnavailableError
from deniable.aggregator.central.curator.service import (
    CuratorService,
    ReleaseNotFoundError,
    query_from_wire,
    release_from_wire,
)
from deniable.aggregator.server._auth import AdminToken
from deniable.aggregator.server.curator import _convert as convert
from deniable.shared.wire.v1 import curator_pb2 as pb
from deniable.shared.wire.v1 import curator_pb2_grpc

__all__ = ["ADMIN_METHODS", "MAX_DETAILS", "CuratorServicer"]

log = logging.getLogger("deniable.curator")
ADMIN_METHODS = frozenset({"IssueToken", "RevokeToken", "ListAnalysts"})
"""RPCs that need the custodian's admin token; every other one an analyst's token."""
MAX_DETAILS = 2000
T = TypeVar("T")
Context = grpc.ServicerContext


class CuratorServicer(curator_pb2_grpc.CuratorServicer):
    """Each RPC: check the caller's token, run the service, answer or abort with a status.

    Analysts' calls carry ``authorization: Bearer <token>`` of a live token for this data
    set; the custodian's calls the admin token. A query runs with the OS CSPRNG only: no
    seed crosses the wire, so a daemon that charges a budget never draws seeded noise.
    """

    def __init__(self, service: CuratorService, admin: AdminToken) -> None:
        self.service = service
        self.admin = admin

    # --- analysts ---------------------------------------------------------------------

    def Describe(self, request: pb.DescribeRequest, context: Context) -> pb.DatasetDescription:
        """The data set's public description."""
        self._analyst(context, "Describe")
        return self._run(context, "Describe", lambda: convert.description(self.service))

    def Query(self, request: pb.QueryRequest, context: Context) -> pb.QueryResponse:
        """One query, charged before any noise is drawn."""
        analyst = self._analyst(context, "Query")
        return self._run(
            context,
            "Query",
            lambda: convert.answer(self.service.query(analyst, query_from_wire(request))),
        )

    def Release(self, request: pb.ReleaseRequest, context: Context) -> pb.ReleaseResponse:
        """A noisy contingency table, charged once and stored with the custodian."""
        analyst = self._analyst(context, "Release")
        return self._run(
            context,
            "Release",
            lambda: convert.release(self.service.release(analyst, release_from_wire(request))),
        )

    def GetRelease(self, request: pb.GetReleaseRequest, context: Context) -> pb.ReleaseResponse:
        """A stored release, free."""
        self._analyst(context, "GetRelease")
        return self._run(
            context,
            "GetRelease",
            lambda: convert.release(self.service.get_release(request.release_id)),
        )

    def GetLedger(self, request: pb.GetLedgerRequest, context: Context) -> pb.LedgerResponse:
        """The caller's balance and spends."""
        analyst = self._analyst(context, "GetLedger")
        return self._run(
            context, "GetLedger", lambda: convert.ledger(self.service.ledger_of(analyst))
        )

    # --- the custodian ----------------------------------------------------------------

    def IssueToken(self, request: pb.IssueTokenRequest, context: Context) -> pb.IssueTokenResponse:
        """A new analyst token with its budget (shown once)."""
        self._admin(context, "IssueToken")

        def issue() -> pb.IssueTokenResponse:
            token, balance = self.service.issue_token(
                request.analyst, request.epsilon, request.delta
            )
            return pb.IssueTokenResponse(token=token, balance=convert.balance(balance))

        return self._run(context, "IssueToken", issue)

    def RevokeToken(self, request: pb.RevokeTokenRequest, context: Context) -> pb.LedgerResponse:
        """Revoke an analyst's token; their spends stay."""
        self._admin(context, "RevokeToken")
        return self._run(
            context,
            "RevokeToken",
            lambda: convert.ledger(self.service.revoke_token(request.analyst)),
        )

    def ListAnalysts(
        self, request: pb.ListAnalystsRequest, context: Context
    ) -> pb.ListAnalystsResponse:
        """Every analyst's balance."""
        self._admin(context, "ListAnalysts")
        return self._run(context, "ListAnalysts", lambda: convert.analysts(self.service))

    # --- plumbing ---------------------------------------------------------------------

    def _analyst(self, context: Context, method: str) -> str:
        """The analyst a live token of this data set names, else abort UNAUTHENTICATED."""
        token = _bearer(context.invocation_metadata())
        try:
            analyst = self.service.authenticate(token) if token else None
        except LedgerUnavailableError as error:
            log.warning("ledger unreachable", extra={"rpc": method, "detail": str(error)})
            context.abort(grpc.StatusCode.UNAVAILABLE, "the custodian's ledger is unreachable")
        if analyst is None:
            log.info("unauthenticated", extra={"rpc": method})
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "curator calls need metadata 'authorization: Bearer <token>' with a live "
                "analyst token of this data set (issued by `curate tokens issue`)",
            )
        assert analyst is not None
        return analyst

    def _admin(self, context: Context, method: str) -> None:
        """Abort UNAUTHENTICATED unless the call carries exactly the custodian's admin token."""
        if not self.admin.carried_by(context.invocation_metadata()):
            log.info("unauthenticated", extra={"rpc": method})
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                f"{method} needs metadata 'authorization: Bearer <token>' with the "
                "custodian's admin token",
            )

    def _run(self, context: Context, method: str, work: Callable[[], T]) -> T:
        """``work()``, or abort with the status its error carries (logged, never a traceback)."""
        try:
            return work()
        except BudgetExceededError as error:
            code, message = grpc.StatusCode.FAILED_PRECONDITION, str(error)
        except LedgerUnavailableError as error:
            log.warning("ledger unreachable", extra={"rpc": method, "detail": str(error)})
            code, message = grpc.StatusCode.UNAVAILABLE, "the custodian's ledger is unreachable"
        except ReleaseNotFoundError as error:
            code, message = grpc.StatusCode.NOT_FOUND, str(error)
        except CuratorError as error:
            code, message = grpc.StatusCode.INVALID_ARGUMENT, str(error)
        except Exception:
            log.exception("internal error", extra={"rpc": method})
            code, message = grpc.StatusCode.INTERNAL, "internal error; see the curator's log"
        if len(message) > MAX_DETAILS:
            message = f"{message[: MAX_DETAILS - 20]}... (message cut)"
        log.info("rejected", extra={"rpc": method, "code": code.name, "detail": message})
        context.abort(code, message)
        raise AssertionError("unreachable")  # abort raises


def _bearer(metadata: Any) -> str | None:
    """The token of exactly one ``authorization: Bearer <token>`` header, else None."""
    values = [value for key, value in metadata or () if key == "authorization"]
    if len(values) != 1:
        return None
    value = values[0].decode() if isinstance(values[0], bytes) else str(values[0])
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme == "Bearer" and token.strip() else None
