"""``curate release`` (a noisy contingency table, ε spent once), answers from it, ``ledger``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import emit_json
from deniable.aggregator.cli.curate._errors import curator_errors
from deniable.aggregator.cli.curate._options import (
    analyst_options,
    check_seed_source,
    emit,
    open_session,
    query_options_message,
    session_options,
)
from deniable.aggregator.cli.curate._render import render_answer
from deniable.shared.wire.v1 import curator_pb2 as pb

__all__ = ["answer_from_release", "describe_command", "ledger_command", "release_command"]

QUERY_ONLY = (
    "epsilon",
    "preview",
    "seed",
    "delta",
    "privacy_unit",
    "max_contributions",
    "neighbours",
    "low",
    "high",
    "resolution",
    "max_rows",
    "query_delta",
    "types",
    "budget",
)


def _load_release(data: Path | None, options: dict[str, Any], name: str) -> dict[str, Any]:
    """A release file's document, or a stored release (by id) of the daemon or the ledger."""
    path = Path(name)
    if path.is_file():
        if data is not None or options.get("server"):
            raise curator.CuratorError(
                "--from-release FILE answers without the data: give no DATA or --server"
            )
        try:
            document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise curator.CuratorError(f"--from-release: cannot read {path} ({error})") from None
        return {**document, "release_id": document.get("release_id") or str(path)}
    if data is None and not options.get("server"):
        raise curator.CuratorError(
            f"--from-release: no file {name!r}; a release id needs --server (or DATA and --db)"
        )
    session = open_session(data, options)
    try:
        return {**session.get_release(name), "release_id": name}
    finally:
        session.close()


def answer_from_release(
    data: Path | None,
    options: dict[str, Any],
    kind: str,
    column: str | None,
    values: str | None,
) -> bool:
    """Answer a count or histogram from --from-release, if given; False when not."""
    name = options.get("from_release")
    if not name:
        return False
    with curator_errors():
        context = click.get_current_context()
        given = [
            f"--{key.replace('_', '-')}"
            for key in QUERY_ONLY
            if context.get_parameter_source(key)
            in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
        ]
        if given:
            raise curator.CuratorError(
                f"{', '.join(given)}: not used with --from-release (it spends nothing)"
            )
        document = _load_release(data, options, name)
        result = curator.answer_from_release(
            document,
            kind,
            column=column,
            values=values.split(",") if values else None,
            where=options.get("where"),
            confidence=options.get("confidence") or 0.95,
        )
    emit(result, render_answer(result), options["as_json"])
    return True


@click.command("release")
@analyst_options
@click.option("--columns", required=True, help="The columns of the table, comma-separated.")
@click.option(
    "--values",
    "listed",
    multiple=True,
    help="COLUMN=V1,V2,...: the public values of each column (repeat per column); rows "
    "with an unlisted value are in no cell.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the release to this new file (JSON; never overwritten).",
)
@click.option("--max-rows", type=int, help="A public upper bound on each cell (add-remove).")
def release_command(
    data: Path | None,
    columns: str,
    listed: tuple[str, ...],
    output: Path | None,
    max_rows: int | None,
    **options: Any,
) -> None:
    """Spend ε once on a noisy contingency table of --columns over their listed values.

    Every cell gets discrete Laplace noise of scale Δ/ε (Δ = K under add-remove, 2K under
    replace). The custodian keeps it; its id (or the --output file) answers any later
    count or histogram over those columns with --from-release, at no privacy cost.
    """
    with curator_errors():
        if options.get("seed") is not None:
            check_seed_source()
            raise curator.CuratorError(
                "--seed: a release is published, and seeded noise is not private"
            )
        if options.get("from_release"):
            raise curator.CuratorError("--from-release: a release is made from the data")
        names = [name.strip() for name in columns.split(",") if name.strip()]
        given: dict[str, list[str]] = {}
        for item in listed:
            name, sep, texts = item.partition("=")
            if not sep:
                raise curator.CuratorError(f"--values: expected COLUMN=V1,V2,..., got {item!r}")
            given[name.strip()] = texts.split(",")
        for name in given:
            if name not in names:
                raise curator.CuratorError(f"--values: {name!r} is not one of --columns")
        missing = [name for name in names if name not in given]
        if missing:
            raise curator.CuratorError(
                f"--values: list the values of {missing[0]!r} (--values {missing[0]}=V1,V2,...): "
                "the categories must be public"
            )
        if output is not None and output.exists():
            raise curator.CuratorError(
                f"--output: {output} exists (a release is never overwritten)"
            )
        request = pb.ReleaseRequest(
            options=query_options_message(options),
            columns=[pb.ReleaseColumn(column=name, values=given[name]) for name in names],
            **({} if max_rows is None else {"max_rows": max_rows}),
        )
        session = open_session(data, options)
        try:
            document = session.release(request)
        finally:
            session.close()
        if output is not None:
            with output.open("x", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
                handle.write("\n")
    cells = document.get("cells", [])
    lines = [
        f"Released {len(cells)} cells of {' × '.join(names)}"
        + (f" as {document['release_id']}" if document.get("release_id") else "")
        + (f", written to {output}" if output else ""),
        *(f"  {', '.join(map(str, cell['values']))}: {cell['count']}" for cell in cells[:50]),
        *(["  ..."] if len(cells) > 50 else []),
    ]
    emit(document, lines, options["as_json"])


@click.command("ledger")
@session_options
def ledger_command(data: Path | None, **options: Any) -> None:
    """What was spent: your balance and spends (the daemon's), or the custodian's (DATA)."""
    with curator_errors():
        session = open_session(data, options)
        try:
            document = session.ledger()
        finally:
            session.close()
    if options["as_json"]:
        emit_json(document)
        return
    balance = document["balance"]
    click.echo(
        f"Data set {document['dataset']!r}, analyst {balance['analyst']!r}: spent ε = "
        f"{balance['epsilon_spent']:g}"
        + (
            f" of {balance['epsilon_budget']:g}"
            if balance.get("epsilon_budget") is not None
            else ""
        )
        + f"; the data set has ε = {balance['dataset_epsilon_left']:g} left"
    )
    for spend in document["spends"]:
        click.echo(f"  {spend['epsilon']:g}  {spend['query']}")


@click.command("describe")
@session_options
def describe_command(data: Path | None, **options: Any) -> None:
    """The data set's columns and types, privacy unit, K and neighbours (free)."""
    with curator_errors():
        session = open_session(data, options)
        try:
            document = session.describe()
        finally:
            session.close()
    if options["as_json"]:
        emit_json(document)
        return
    click.echo(f"Data set {document['dataset']!r}: {document['unit_description']}")
    click.echo(f"Neighbours: {document['neighbours']}")
    for name, kind in document["columns"].items():
        click.echo(f"  {name}: {kind}")
