"""``deniable-aggregator serve``: the aggregator daemon."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from deniable.aggregator.cli._common import (
    ADMIN_TOKEN_FILE_VARIABLE,
    DATABASE_VARIABLE,
    fail,
    user_errors,
)
from deniable.aggregator.cli._daemon import check_grace, wait_for_signal
from deniable.aggregator.server import (
    DEFAULT_LISTEN,
    DEFAULT_MIN_FREE,
    IngestLimits,
    LimitError,
    ListenAddress,
    MinFree,
    PeerLimit,
    ServerLimits,
    TlsError,
    WebListenError,
    WebOptions,
    configure_logging,
    load_or_create_token,
    load_server_tls,
    start_server,
    warn_if_plaintext,
)
from deniable.aggregator.storage import (
    StorageError,
    data_dir,
    default_database_url,
    open_storage,
)
from deniable.shared._cli import RETIRED_WARNINGS
from deniable.shared.errors import InvalidArgument

log = logging.getLogger("deniable.aggregator")
_DEFAULTS = ServerLimits()
_INGEST = IngestLimits()
F = TypeVar("F", bound=Callable[..., Any])
_FILE = click.Path(path_type=Path)


def _limit_option(name: str, text: str) -> Callable[[F], F]:
    """``--NAME`` with :class:`ServerLimits`'s default."""
    field = name.replace("-", "_")
    return click.option(
        f"--{name}", field, type=int, default=getattr(_DEFAULTS, field), show_default=True,
        help=text,
    )  # fmt: skip


def _listen_address(ctx: click.Context, param: click.Parameter, value: str) -> ListenAddress:
    """``--listen``, checked before anything is opened: one line that quotes it, exit code 2."""
    return ListenAddress.parse(value)


def _web_address(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> ListenAddress | None:
    """``--web``: as ``--listen``, but a host and port (no Unix socket); None when not given."""
    if value is None:
        return None
    address = ListenAddress.parse(value)
    if address.port is None:
        raise InvalidArgument(f"--web {value!r}: HOST:PORT; a Unix socket is not served")
    return address


@click.command("serve")
@click.option(
    "--db",
    "database",
    envvar=DATABASE_VARIABLE,
    help="Database URL, e.g. sqlite:///path/to.db  [default: sqlite:///$XDG_DATA_HOME/"
    "deniable/aggregator.db]",
)
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    callback=_listen_address,
    help="HOST:PORT to listen on; an IPv6 address in brackets, [::1]:50051; port 1..65535, "
    "or 0 for any free port (the bound address is printed on stdout and logged).",
)
@click.option(
    "--admin-token-file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    envvar=ADMIN_TOKEN_FILE_VARIABLE,
    help="File holding the admin token. Default: generated at first start into "
    "$XDG_DATA_HOME/deniable/admin-token (mode 0600).",
)
@click.option(
    "--grace",
    type=float,
    default=10.0,
    show_default=True,
    callback=check_grace,
    help="Shutdown grace (s): how long calls in flight may finish.",
)
@click.option(
    "--tls-cert",
    type=_FILE,
    metavar="FILE",
    help="Serve TLS with this PEM certificate chain (needs --tls-key).",
)
@click.option(
    "--tls-key",
    type=_FILE,
    metavar="FILE",
    help="The PEM private key (unencrypted) of --tls-cert.",
)
@click.option(
    "--tls-client-ca",
    type=_FILE,
    metavar="FILE",
    help="Mutual TLS: require client certificates signed by these PEM CA certificates.",
)
@click.option(
    "--web",
    metavar="HOST:PORT",
    callback=_web_address,
    help="Also serve browsers here (off by default): the participant's page and its calls "
    "(GetSurvey, ListSurveys, SubmitReports; never an admin call) over the Connect "
    "protocol, and GET /healthz; same limits and TLS as the gRPC port; port 0: any free "
    "port (printed and logged).",
)
@click.option(
    "--web-origin",
    "web_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Another site (https://host[:port]) whose pages may call the web port (CORS); "
    "repeatable (the variable: separated by spaces). Default: none, no CORS headers.",
)
@_limit_option("max-message-bytes", "Largest request; bigger: RESOURCE_EXHAUSTED.")
@_limit_option("max-batch", "Most reports per SubmitReports; more: RESOURCE_EXHAUSTED.")
@_limit_option(
    "max-concurrent-rpcs", "Calls running or queued at once; beyond: RESOURCE_EXHAUSTED."
)
@_limit_option(
    "max-inflight-bytes",
    "Request bytes being handled at once (at least --max-message-bytes); a request that "
    "would pass it: RESOURCE_EXHAUSTED.",
)
@_limit_option(
    "max-connections", "Connections open at once; one beyond is closed as it is accepted."
)
@_limit_option(
    "calls-per-connection",
    "Calls open at once on one connection (HTTP/2 MAX_CONCURRENT_STREAMS); a client's "
    "further calls wait on its side.",
)
@_limit_option("workers", "Threads that run calls (the rest queue).")
@click.option(
    "--peer-reports-per-second",
    type=float,
    default=_INGEST.peer.reports_per_second,
    show_default=True,
    metavar="RATE",
    help="Reports one peer address (an IPv6 /64) may store per second, a token bucket; "
    "batches with the admin token or an enrollment token are not counted; over it: "
    "RESOURCE_EXHAUSTED, nothing stored. 0: no per-peer limit.",
)
@click.option(
    "--peer-report-burst",
    type=int,
    default=_INGEST.peer.burst,
    show_default=True,
    metavar="N",
    help="The per-peer bucket's size: the most reports a peer may send at once (a larger "
    "batch is always refused). 0: no per-peer limit.",
)
@click.option(
    "--min-free-space",
    default=DEFAULT_MIN_FREE,
    show_default=True,
    metavar="SIZE",
    help="Refuse new reports (RESOURCE_EXHAUSTED) while the SQLite database's filesystem "
    "has less free space: bytes with a unit (500MB, 2GiB) or a share of the disk (5%); "
    "estimates, listings and exports go on. 0: no watermark. Not applied to PostgreSQL.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
def serve_command(
    database: str | None,
    listen: ListenAddress,
    admin_token_file: Path | None,
    grace: float,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
    web: ListenAddress | None,
    web_origins: tuple[str, ...],
    max_message_bytes: int,
    max_batch: int,
    max_concurrent_rpcs: int,
    max_inflight_bytes: int,
    max_connections: int,
    calls_per_connection: int,
    workers: int,
    peer_reports_per_second: float,
    peer_report_burst: int,
    min_free_space: str,
    log_level: str,
) -> None:
    """Run the aggregator daemon until SIGTERM or SIGINT.

    Logs are JSON lines on stderr. On a signal the health service turns NOT_SERVING,
    calls in flight finish (up to --grace seconds) and the database is closed.
    Without TLS on an address other than loopback it logs a warning: the admin
    token and the reports would travel unencrypted. Limits (and the memory they
    bound), keepalive and TLS setup: docs/security.md. Behind a proxy every
    client has the proxy's address: raise or turn off --peer-reports-per-second
    and limit rates at the proxy. Load tests from one machine need
    --peer-reports-per-second 0.

    --web HOST:PORT also serves browsers from this process: the participant's
    page (/ and /s/SURVEY_ID), GetSurvey, ListSurveys and SubmitReports over the
    Connect protocol (JSON or binary; the admin calls are not there, and the
    admin token is never read there), and GET /healthz; with the same TLS,
    limits, workers and per-peer buckets as the gRPC port. Every answer carries
    a strict Content-Security-Policy; other sites' pages may call it only when
    named with --web-origin. See docs/security.md, "The web port".
    """
    try:
        tls = load_server_tls(tls_cert, tls_key, tls_client_ca)
        limits = ServerLimits(
            max_message_bytes=max_message_bytes,
            max_batch=max_batch,
            max_concurrent_rpcs=max_concurrent_rpcs,
            max_inflight_bytes=max_inflight_bytes,
            max_connections=max_connections,
            calls_per_connection=calls_per_connection,
            workers=workers,
        )
        ingest = IngestLimits(
            PeerLimit(peer_reports_per_second, peer_report_burst), MinFree.parse(min_free_space)
        )
        if web_origins and web is None:
            fail("--web-origin needs --web (the origins may call the web port)", 2)
        web_options = WebOptions(web, web_origins) if web is not None else None
    except LimitError as error:
        fail(f"--{error.field.replace('_', '-')}: {error.problem}", 2)
    except (TlsError, ValueError) as error:
        fail(str(error), 2)
    configure_logging(log_level)
    for warning in click.get_current_context().meta.pop(RETIRED_WARNINGS, ()):
        log.warning(warning)
    url = database or default_database_url()
    with user_errors():
        # A given token file is checked before the database is opened (or created); a
        # generated one only once the database opened.
        given = load_or_create_token(admin_token_file, data_dir()) if admin_token_file else None
        try:
            storage = open_storage(url, connections=limits.workers)
        except StorageError as error:
            raise click.ClickException(str(error)) from None
        token, token_path, created = given or load_or_create_token(None, data_dir())
    try:
        running = start_server(
            storage, token, listen, limits=limits, tls=tls, ingest=ingest, web=web_options
        )
    except WebListenError as error:
        storage.close()
        raise click.ClickException(str(error)) from None
    except (OSError, RuntimeError) as error:
        storage.close()
        raise click.ClickException(f"cannot listen on {listen}: {error}") from None
    bound = listen.with_port(running.port)
    web_url = None
    if web is not None and running.web_port is not None:
        web_url = f"{'https' if tls else 'http'}://{web.with_port(running.web_port)}"
    log.info(
        "listening",
        extra={
            "address": str(bound),
            "port": running.port,
            "db": url,
            "admin_token_file": str(token_path),
            "admin_token_created": created,
            "tls": "mutual" if tls is not None and tls.mutual else "on" if tls else "off",
            "max_message_bytes": limits.max_message_bytes,
            "max_batch": limits.max_batch,
            "max_concurrent_rpcs": limits.max_concurrent_rpcs,
            "max_inflight_bytes": limits.max_inflight_bytes,
            "max_connections": limits.max_connections,
            "calls_per_connection": limits.calls_per_connection,
            "workers": limits.workers,
            "held_bytes_bound": limits.held_bytes_bound(),
            "peer_reports_per_second": ingest.peer.reports_per_second,
            "peer_report_burst": ingest.peer.burst,
            "min_free_space": ingest.min_free_space.text,
            "web": web_url or "off",
            **({"web_port": running.web_port, "web_origins": sorted(web_origins)} if web else {}),
        },
    )
    if ingest.min_free_space.enabled and storage.disk_path() is None:
        log.info(
            "no free-space watermark: the database's disk is not this machine's",
            extra={"min_free_space": ingest.min_free_space.text},
        )
    warn_if_plaintext(str(listen), tls, log)
    if web is not None:
        warn_if_plaintext(str(web), tls, log, "reports and survey traffic")
    click.echo(f"listening on {bound}")
    if web_url:
        click.echo(f"serving the participant's page on {web_url}/")
    wait_for_signal(log)
    running.stop(grace)
