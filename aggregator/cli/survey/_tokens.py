"""``deniable-aggregator survey tokens``: issue enrollment tokens, shown once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from deniable.aggregator.cli._common import (
    emit_json,
    fail,
    read_token,
    remote_errors,
    server_option,
    tls_options,
    token_option,
)
from deniable.client import AggregatorClient
from deniable.shared.transport import TlsConfig

__all__ = ["tokens_command"]


@click.command("tokens")
@server_option
@tls_options
@token_option
@click.argument("survey_id")
@click.option("--count", type=int, required=True, help="How many tokens (1..100,000).")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the tokens to this new file (mode 0600) instead of stdout; never overwrites.",
)
@click.option("--json", "as_json", is_flag=True, help='{"survey_id": ..., "tokens": [...]}.')
def tokens_command(
    server: str,
    tls: TlsConfig | None,
    admin_token_file: Path | None,
    survey_id: str,
    count: int,
    output: Path | None,
    as_json: bool,
) -> None:
    """Issue COUNT enrollment tokens for SURVEY_ID and print them, one per line.

    Give each participant one token (deniable answer --token): it lets them
    store one report per question. The tokens are shown only now; the daemon
    keeps only their SHA-256 hashes, so a lost token cannot be recovered. The
    call is not retried: if it fails after reaching the daemon, issue anew.
    With --output the tokens (or, with --json, the JSON document) go to a new
    file readable only by you, and stdout holds only a summary (--json: the
    survey id, count and file).
    """
    admin_token = read_token(admin_token_file)
    handle = _create_private(output) if output is not None else None
    try:
        with (
            remote_errors(server),
            AggregatorClient(server, admin_token=admin_token, tls=tls) as client,
        ):
            issued = client.issue_tokens(survey_id, count)
        document = {"survey_id": survey_id, "tokens": issued}
        text = (
            json.dumps(document, indent=2) + "\n"
            if as_json
            else "".join(f"{token}\n" for token in issued)
        )
        if handle is None:
            click.echo(text, nl=False)
            return
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    except BaseException:
        if handle is not None:
            handle.close()
            assert output is not None
            output.unlink()  # ours, created above: no tokens in it
        raise
    handle.close()
    click.echo(f"issued {len(issued):,} tokens for survey {survey_id!r} into {output}", err=True)
    if as_json:
        emit_json({"survey_id": survey_id, "count": len(issued), "output": str(output)})


def _create_private(path: Path) -> Any:
    """Create ``path`` for writing, mode 0600; exit 2 if it exists or cannot be created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fail(f"--output {path}: already exists; refusing to overwrite it", 2)
    except OSError as error:
        fail(f"--output {path}: cannot create it ({error.strerror})", 2)
    return os.fdopen(fd, "w", encoding="ascii")
