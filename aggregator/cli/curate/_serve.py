"""``curate serve``: the custodian's daemon over one data set, a Curator gRPC service."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import click

from deniable.aggregator.cli._common import PREFIX, fail, user_errors
from deniable.aggregator.cli._daemon import check_grace, wait_for_signal
from deniable.aggregator.cli.curate._dataset import dataset_options, open_service

if TYPE_CHECKING:
    from deniable.aggregator.server import ListenAddress

__all__ = ["DEFAULT_CURATOR_LISTEN", "serve_command"]

log = logging.getLogger("deniable.curator")
DEFAULT_CURATOR_LISTEN = "127.0.0.1:50061"
VARIABLE = f"{PREFIX}_CURATE"
_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("serve")
@dataset_options(server=True)
@click.option(
    "--listen",
    default=DEFAULT_CURATOR_LISTEN,
    show_default=True,
    envvar=f"{VARIABLE}_LISTEN",
    callback=lambda ctx, param, value: _listen(value),
    help="HOST:PORT to listen on ([::1]:PORT for IPv6; port 0: any free port, printed).",
)
@click.option(
    "--admin-token-file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    envvar=f"{VARIABLE}_ADMIN_TOKEN_FILE",
    help="The custodian's admin token (for `curate tokens`). Default: generated at first "
    "start into $XDG_DATA_HOME/deniable/curator-admin-token (mode 0600).",
)
@click.option("--tls-cert", type=_FILE, metavar="FILE", help="Serve TLS with this PEM chain.")
@click.option("--tls-key", type=_FILE, metavar="FILE", help="The PEM key of --tls-cert.")
@click.option(
    "--tls-client-ca",
    type=_FILE,
    metavar="FILE",
    help="Mutual TLS: require client certificates signed by these PEM CA certificates.",
)
@click.option("--workers", type=int, default=4, show_default=True, help="Threads that run queries.")
@click.option(
    "--max-concurrent-rpcs",
    envvar=f"{VARIABLE}_MAX_CONCURRENT_RPCS",
    show_envvar=True,
    type=int,
    default=128,
    show_default=True,
    help="Calls in the server at once; beyond it RESOURCE_EXHAUSTED.",
)
@click.option(
    "--grace", type=float, default=10.0, show_default=True, callback=check_grace,
    help="Shutdown grace (s): how long queries in flight may finish.",
)  # fmt: skip
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
def serve_command(
    listen: ListenAddress,
    admin_token_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
    workers: int,
    max_concurrent_rpcs: int,
    grace: float,
    log_level: str,
    **dataset: object,
) -> None:
    """Hold one data set and answer analysts' queries over gRPC, until SIGTERM or SIGINT.

    The custodian runs this where the data lives: --data is a CSV or Parquet file (read
    by an embedded DuckDB that can open no other file) or a postgresql:// URL with
    --table (the queries run in PostgreSQL). Analysts never see rows: they hold a token
    from `curate tokens issue` and run `curate count|histogram|sum|mean|release|ledger
    --server HOST:PORT --token-file F`. Every query is charged to the analyst's budget
    and the data set's (--budget, --delta) in the ledger (--db) BEFORE any noise is
    drawn; the ledger is keyed by --dataset, not by the file, and survives restarts.
    --privacy-unit COLUMN --max-contributions K protects all rows of one person: each
    query uses at most K of a unit's rows. Logs are JSON lines on stderr.
    """
    from deniable.aggregator.server import (
        ServerLimits,
        TlsError,
        configure_logging,
        load_or_create_token,
        load_server_tls,
        warn_if_plaintext,
    )
    from deniable.aggregator.server.curator import start_curator
    from deniable.aggregator.storage import data_dir

    try:
        tls = load_server_tls(tls_cert, tls_key, tls_client_ca)
        limits = ServerLimits(workers=workers, max_concurrent_rpcs=max_concurrent_rpcs)
    except (TlsError, ValueError) as error:
        fail(str(error), 2)
    configure_logging(log_level)
    with user_errors():
        token, token_path, created = load_or_create_token(
            admin_token_file, data_dir(), "curator-admin-token"
        )
    service = open_service(dataset)
    try:
        running = start_curator(service, token, listen, limits=limits, tls=tls)
    except (OSError, RuntimeError, ValueError) as error:
        service.close()
        raise click.ClickException(f"cannot listen on {listen}: {error}") from None
    bound = listen.with_port(running.port)
    facts = service.describe()
    log.info(
        "listening",
        extra={
            "address": str(bound),
            "port": running.port,
            "dataset": service.name,
            "source": service.dataset.engine.description,
            "privacy_unit": facts["privacy_unit"],
            "max_contributions": facts["max_contributions"],
            "neighbours": facts["neighbours"],
            "admin_token_file": str(token_path),
            "admin_token_created": created,
            "tls": "mutual" if tls is not None and tls.mutual else "on" if tls else "off",
        },
    )
    warn_if_plaintext(str(listen), tls, log, "analyst tokens and answers")
    click.echo(f"listening on {bound}")
    wait_for_signal(log)
    running.stop(grace)


def _listen(value: str) -> ListenAddress:
    from deniable.aggregator.server import ListenAddress

    return ListenAddress.parse(value)
