"""A gRPC client for the curator's daemon: the analyst's and the custodian's calls."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import grpc

from deniable.shared.transport import MAX_MESSAGE_BYTES, RemoteError, TlsConfig, open_channel
from deniable.shared.wire.v1 import curator_pb2 as pb
from deniable.shared.wire.v1 import curator_pb2_grpc as pb_grpc

__all__ = ["CuratorClient"]

Response = TypeVar("Response")
QUERY_TIMEOUT_S = 600.0
"""A query over a large source can take a while; reads of the ledger are quick."""


class CuratorClient:
    """Calls ``deniable.v1.Curator`` at ``target`` with one bearer token.

    ``token`` is an analyst's token for analysts' calls, or the custodian's admin token
    for IssueToken, RevokeToken and ListAnalysts. **No call is retried**: a query whose
    answer was lost may already have been charged, and a retry would spend again.
    """

    def __init__(
        self, target: str, token: str, *, tls: TlsConfig | None = None, timeout: float = 30.0
    ) -> None:
        self.target = target
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._timeout = timeout
        self._channel = open_channel(target, tls, MAX_MESSAGE_BYTES)
        self.stub = pb_grpc.CuratorStub(self._channel)

    def __enter__(self) -> CuratorClient:
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

    def _call(
        self, method: Callable[..., Response], request: Any, timeout: float | None = None
    ) -> Response:
        try:
            return method(request, timeout=timeout or self._timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            code: grpc.StatusCode = error.code()
            raise RemoteError(code, error.details() or code.name) from None

    def describe(self) -> pb.DatasetDescription:
        """The data set's columns, privacy unit and neighbours."""
        return self._call(self.stub.Describe, pb.DescribeRequest())

    def query(self, request: pb.QueryRequest) -> pb.QueryResponse:
        """One query (charged unless it is a preview)."""
        return self._call(self.stub.Query, request, QUERY_TIMEOUT_S)

    def release(self, request: pb.ReleaseRequest) -> pb.ReleaseResponse:
        """A release, charged once and stored by the custodian."""
        return self._call(self.stub.Release, request, QUERY_TIMEOUT_S)

    def get_release(self, release_id: str) -> pb.ReleaseResponse:
        """A stored release, free."""
        return self._call(self.stub.GetRelease, pb.GetReleaseRequest(release_id=release_id))

    def ledger(self) -> pb.LedgerResponse:
        """The caller's balance and spends."""
        return self._call(self.stub.GetLedger, pb.GetLedgerRequest())

    def issue_token(
        self, analyst: str, epsilon: float, delta: float = 0.0
    ) -> pb.IssueTokenResponse:
        """A new analyst token (custodian's admin token)."""
        return self._call(
            self.stub.IssueToken,
            pb.IssueTokenRequest(analyst=analyst, epsilon=epsilon, delta=delta),
        )

    def revoke_token(self, analyst: str) -> pb.LedgerResponse:
        """Revoke an analyst's token (custodian's admin token)."""
        return self._call(self.stub.RevokeToken, pb.RevokeTokenRequest(analyst=analyst))

    def analysts(self) -> pb.ListAnalystsResponse:
        """Every analyst's balance (custodian's admin token)."""
        return self._call(self.stub.ListAnalysts, pb.ListAnalystsRequest())
