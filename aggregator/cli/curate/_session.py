"""Where a query runs: in this process over a local source, or on a curator daemon."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import PREFIX, remote_errors, tls_options
from deniable.shared.transport import TlsConfig
from deniable.shared.transport.options import check_server
from deniable.shared.wire.v1 import curator_pb2 as pb

if TYPE_CHECKING:
    from deniable.aggregator.central.curator.service import BalanceView

__all__ = ["LocalSession", "RemoteSession", "Session", "balance_from_wire", "remote_options"]

F = TypeVar("F", bound=Callable[..., Any])
TOKEN_VARIABLE = f"{PREFIX}_CURATE_TOKEN"


class Session(ABC):
    """A data set to query: each call returns the JSON document the CLI prints."""

    @abstractmethod
    def query(self, request: pb.QueryRequest) -> dict[str, Any]:
        """Run (or preview) one query."""

    @abstractmethod
    def release(self, request: pb.ReleaseRequest) -> dict[str, Any]:
        """Make a release; the document has its ``release_id``."""

    @abstractmethod
    def get_release(self, release_id: str) -> dict[str, Any]:
        """A stored release's document."""

    @abstractmethod
    def ledger(self) -> dict[str, Any]:
        """The caller's balance and spends."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The data set's public description."""

    @abstractmethod
    def close(self) -> None:
        """Close what the session holds."""


class LocalSession(Session):
    """The custodian's own queries in this process, charged as the analyst ``custodian``.

    With a seed the noise is NOT private: reproducible by anyone with the seed, so such
    a query is never charged and its output says so; the daemon has no seed at all.
    """

    def __init__(self, service: curator.CuratorService, seed: int | None = None) -> None:
        self.service = service
        self.seed = seed

    def _source(self) -> Any:
        import numpy as np

        from deniable.shared.sampling import os_source, source_for

        return os_source if self.seed is None else source_for(np.random.default_rng(self.seed))

    def query(self, request: pb.QueryRequest) -> dict[str, Any]:
        answer = self.service.query(
            curator.CUSTODIAN,
            curator.query_from_wire(request),
            source=self._source(),
            charge=self.seed is None,
        )
        return self._mark(answer.document)

    def release(self, request: pb.ReleaseRequest) -> dict[str, Any]:
        answer = self.service.release(
            curator.CUSTODIAN,
            curator.release_from_wire(request),
            source=self._source(),
            charge=self.seed is None,
        )
        return self._mark({**answer.document, "release_id": answer.release_id or None})

    def get_release(self, release_id: str) -> dict[str, Any]:
        return self.service.get_release(release_id).document

    def ledger(self) -> dict[str, Any]:
        return self.service.ledger_of(curator.CUSTODIAN).to_dict()

    def describe(self) -> dict[str, Any]:
        return {**self.service.describe()}

    def close(self) -> None:
        self.service.close()

    def _mark(self, document: dict[str, Any]) -> dict[str, Any]:
        if self.seed is None:
            return document
        return {**document, "privacy": {"private": False, "seed": self.seed}}


class RemoteSession(Session):
    """An analyst's queries on a curator daemon, with their token."""

    def __init__(self, server: str, token: str, tls: TlsConfig | None) -> None:
        from deniable.aggregator.server.curator import CuratorClient

        self.server = server
        self.client = CuratorClient(server, token, tls=tls)

    def query(self, request: pb.QueryRequest) -> dict[str, Any]:
        with remote_errors(self.server):
            document: dict[str, Any] = json.loads(self.client.query(request).document_json)
        return document

    def release(self, request: pb.ReleaseRequest) -> dict[str, Any]:
        with remote_errors(self.server):
            response = self.client.release(request)
        return {**json.loads(response.document_json), "release_id": response.release_id}

    def get_release(self, release_id: str) -> dict[str, Any]:
        with remote_errors(self.server):
            document: dict[str, Any] = json.loads(self.client.get_release(release_id).document_json)
        return document

    def ledger(self) -> dict[str, Any]:
        with remote_errors(self.server):
            response = self.client.ledger()
        return _ledger_document(response)

    def describe(self) -> dict[str, Any]:
        with remote_errors(self.server):
            message = self.client.describe()
        return {
            "dataset": message.dataset,
            "columns": {column.name: column.kind for column in message.columns},
            "privacy_unit": message.privacy_unit or None,
            "max_contributions": message.max_contributions,
            "neighbours": message.neighbours,
            "unit_description": message.unit_description,
            "rows": message.rows if message.HasField("rows") else None,
        }

    def close(self) -> None:
        self.client.close()


def _exact(text: str) -> Fraction:
    return Fraction(text or "0")


def balance_from_wire(balance: pb.Balance) -> BalanceView:
    """A Balance message as the service's view (an empty budget: the custodian has none)."""
    from deniable.aggregator.central.curator.service import BalanceView

    return BalanceView(
        analyst=balance.analyst,
        epsilon_budget=_exact(balance.epsilon_budget) if balance.epsilon_budget else None,
        epsilon_spent=_exact(balance.epsilon_spent),
        delta_budget=_exact(balance.delta_budget) if balance.delta_budget else None,
        delta_spent=_exact(balance.delta_spent),
        dataset_epsilon_left=_exact(balance.dataset_epsilon_left),
        dataset_delta_left=_exact(balance.dataset_delta_left),
    )


def _ledger_document(response: pb.LedgerResponse) -> dict[str, Any]:
    """A LedgerResponse as the same document the local ledger prints."""
    from deniable.aggregator.central.curator.service import LedgerView, SpendView

    spends = tuple(
        SpendView(s.at, s.analyst, s.query, _exact(s.epsilon), _exact(s.delta))
        for s in response.spends
    )
    return LedgerView(response.dataset, balance_from_wire(response.balance), spends).to_dict()


def remote_options(function: F) -> F:
    """``--server``, ``--token-file``, ``--token`` and the client TLS options."""
    function = tls_options(function)
    for option in reversed(
        [
            click.option(
                "--server",
                envvar=f"{PREFIX}_CURATE_SERVER",
                show_envvar=True,
                metavar="HOST:PORT",
                callback=check_server,
                help="Query a curator daemon (`curate serve`) instead of a local file.",
            ),
            click.option(
                "--token-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                envvar=f"{PREFIX}_CURATE_TOKEN_FILE",
                show_envvar=True,
                help=f"The analyst token the custodian issued (or set {TOKEN_VARIABLE}).",
            ),
            click.option(
                "--token",
                envvar=TOKEN_VARIABLE,
                show_envvar=True,
                help="The analyst token itself. On the command line it is visible to other "
                "users of this machine (ps): prefer --token-file, or the variable.",
            ),
        ]
    ):
        function = option(function)
    return function


def analyst_token(token_file: Path | None, token: str | None = None) -> str:
    """The analyst token from --token-file, else --token (or its variable); else usage error."""
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except (OSError, UnicodeDecodeError) as error:
            raise curator.CuratorError(
                f"--token-file: cannot read {token_file} ({error})"
            ) from None
    token = (token or "").strip()
    if not token:
        raise click.UsageError(f"--server needs --token-file, --token or {TOKEN_VARIABLE}")
    return token


def local_only(options: Mapping[str, Any], names: tuple[str, ...]) -> None:
    """Refuse options the custodian's daemon sets, when querying it."""
    from click.core import ParameterSource

    context = click.get_current_context()
    flags = {param.name: param.opts[0] for param in context.command.params}
    given = [
        flags[name]
        for name in names
        if name in flags
        and context.get_parameter_source(name)
        in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    ]
    if given:
        raise curator.CuratorError(
            f"{', '.join(given)}: set by the custodian's daemon, not by a query with --server"
        )
