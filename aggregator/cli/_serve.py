"""``deniable-aggregator serve``: the aggregator daemon."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from aggregator._auth import load_or_create_token
from aggregator._logging import configure_logging
from aggregator._server import DEFAULT_LISTEN, start_server
from aggregator.cli._common import user_errors
from aggregator.storage import StorageError, default_database_url, open_storage
from aggregator.storage._url import data_dir

log = logging.getLogger("deniable.aggregator")


@click.command("serve")
@click.option(
    "--db",
    "database",
    help="Database URL, e.g. sqlite:///path/to.db  [default: sqlite:///$XDG_DATA_HOME/"
    "deniable/aggregator.db]",
)
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, help="HOST:PORT (0: any).")
@click.option(
    "--admin-token-file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="File holding the admin token. Default: generated at first start into "
    "$XDG_DATA_HOME/deniable/admin-token (mode 0600).",
)
@click.option("--grace", type=float, default=10.0, show_default=True, help="Shutdown grace (s).")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
def serve_command(
    database: str | None,
    listen: str,
    admin_token_file: Path | None,
    grace: float,
    log_level: str,
) -> None:
    """Run the aggregator daemon until SIGTERM or SIGINT.

    Logs are JSON lines on stderr. On a signal the health service turns NOT_SERVING,
    calls in flight finish (up to --grace seconds) and the database is closed.
    """
    configure_logging(log_level)
    url = database or default_database_url()
    with user_errors():
        try:
            storage = open_storage(url)
        except StorageError as error:
            raise click.ClickException(str(error)) from None
        token, token_path, created = load_or_create_token(admin_token_file, data_dir())
    try:
        running = start_server(storage, token, listen)
    except (OSError, RuntimeError) as error:
        storage.close()
        raise click.ClickException(f"cannot listen on {listen}: {error}") from None
    host = listen.rsplit(":", 1)[0]
    log.info(
        "listening",
        extra={
            "address": f"{host}:{running.port}",
            "port": running.port,
            "db": url,
            "admin_token_file": str(token_path),
            "admin_token_created": created,
        },
    )
    stopping = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        log.info("signal received", extra={"signal": signal.Signals(number).name})
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stopping.wait(timeout=0.5):
        pass
    running.stop(grace)
