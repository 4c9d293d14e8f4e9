"""``--out FILE`` of the commands that write a file: checked up front, replaced only when whole."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import click

from deniable.aggregator.cli._common import fail

__all__ = ["check_out", "whole_file", "written_json_option"]

written_json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document saying what was written (not with --out -).",
)
"""``--json`` of a command that writes ``--out FILE``: a summary of the file, on stdout."""


def check_out(out: str) -> None:
    """Refuse an --out that cannot be written, in one line (exit 2), before any other work."""
    path = Path(out)
    if path.is_dir():
        fail(f"cannot write --out {out!r}: it is a directory", 2)
    if not path.parent.is_dir():
        fail(f"cannot write --out {out!r}: directory {str(path.parent)!r} does not exist", 2)
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        fail(f"cannot write --out {out!r}: not writable", 2)


@contextmanager
def whole_file(out: str) -> Iterator[IO[bytes]]:
    """The stdout for ``-``; else a temporary file beside ``out``, renamed onto it once written.

    If the block fails, the temporary file is removed and ``out`` is left as it was: a
    reader never sees a half-written file.
    """
    if out == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path = Path(out)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
