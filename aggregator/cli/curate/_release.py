"""``curate release`` (a noisy contingency table, ε spent once) and ``curate ledger`` (spends)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import click

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import emit_json
from deniable.aggregator.cli.curate._options import (
    check_before_spending,
    check_seed,
    curator_errors,
    data_argument,
    ledger_option,
    privacy_line,
    read_table,
    spend,
    spend_options,
)

__all__ = ["ledger_command", "release_command"]


def _domains(
    table: curator.Table, columns: list[str], values: tuple[str, ...]
) -> dict[str, list[curator.Value]]:
    """``--values COL=V1,V2`` per released column, as the column's type."""
    given: dict[str, list[str]] = {}
    for item in values:
        name, sep, listed = item.partition("=")
        if not sep:
            raise curator.CuratorError(f"--values: expected COLUMN=V1,V2,..., got {item!r}")
        if name.strip() not in columns:
            raise curator.CuratorError(f"--values: {name.strip()!r} is not one of --columns")
        given[name.strip()] = listed.split(",")
    missing = [name for name in columns if name not in given]
    if missing:
        raise curator.CuratorError(
            f"--values: list the values of {missing[0]!r} (--values {missing[0]}=V1,V2,...): "
            "the categories must be public"
        )
    return {name: curator.parse_values(table, name, given[name], "--values") for name in columns}


@click.command("release")
@data_argument(required=True)
@click.option("--columns", required=True, help="The columns of the table, comma-separated.")
@click.option(
    "--values",
    multiple=True,
    help="COLUMN=V1,V2,...: the public values of each column (repeat per column); rows "
    "with an unlisted value are in no cell.",
)
@click.option("--types", help="Declare column types, e.g. age=int,dept=str.")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The release file to write (JSON); an existing file is not overwritten.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@spend_options
def release_command(
    data: Path,
    columns: str,
    values: tuple[str, ...],
    types: str | None,
    out: Path,
    as_json: bool,
    epsilon: float | None,
    budget: float | None,
    ledger: Path | None,
    neighbours: str,
    max_rows: int | None,
    seed: int | None,
) -> None:
    """Publish a noisy contingency table of --columns, spending --epsilon once.

    Every combination of the listed values is a cell; each cell gets discrete Laplace
    noise of scale Δ/ε (Δ = 1 under add-remove, 2 under replace: the table is one
    histogram) and is clamped to [0, N] (N public under replace; --max-rows or no upper
    clamp under add-remove). Any count or histogram of these columns answered later
    with `--from-release OUT` is post-processing: it costs nothing more.
    """
    with curator_errors():
        if seed is not None:
            check_seed(seed, release=True)  # a seed from the environment: named as such
            raise curator.CuratorError(
                "--seed: a release is published, and seeded noise is not private (anyone "
                "with the seed can subtract it); draw the release without --seed"
            )
        if epsilon is None:
            raise curator.CuratorError("--epsilon is required (the ε the release spends once)")
        if out.exists():
            raise curator.CuratorError(f"--out: {str(out)!r} exists; choose a new file")
        table = read_table(data, types)
        names = [name.strip() for name in columns.split(",") if name.strip()]
        if not names or len(set(names)) != len(names):
            raise curator.CuratorError(f"--columns: name each column once, got {columns!r}")
        for name in names:
            table.column(name, "--columns")
        domains = _domains(table, names, values)
        check_before_spending(table, 0.5, neighbours, max_rows)
        privacy = spend(table, ledger, epsilon, budget, f"release of {','.join(names)}")
        release = curator.make_release(
            table,
            names,
            domains,
            epsilon,
            neighbours,
            max_rows=max_rows,
        )
        document = release.to_dict()
        try:
            with out.open("x", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
        except OSError as error:
            raise curator.CuratorError(f"--out: cannot write {str(out)!r} ({error})") from None
    if as_json:
        emit_json({"out": str(out), "release": document, "privacy": privacy, "private": True})
        return
    click.echo(
        f"Released {len(release.cells)} cells of {','.join(names)} to {out} "
        f"(noise scale Δ/ε = {release.sensitivity}/{release.epsilon:g})"
    )
    click.echo(privacy_line(privacy))


@click.command("ledger")
@data_argument(required=True)
@ledger_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def ledger_command(data: Path, ledger: Path | None, as_json: bool) -> None:
    """Show the privacy budget of DATA.csv and every spend (the ledger is keyed by SHA-256).

    A data set with no query yet has no budget: the first query sets it with --budget.
    Showing creates no ledger. The SHA-256 is for the curator: do not publish it (it
    confirms a guess of a small table).

    \b
    Exit codes: 0 shown, 2 invalid input (a missing data file, a file that is not a
    ledger).
    """
    with curator_errors():
        if not data.is_file():
            raise curator.CuratorError(f"DATA.csv: no file {str(data)!r}")
        digest = curator.file_digest(data)
        path = ledger or curator.default_ledger_path()
        budget = curator.Ledger(path).budget(digest)
    spends = [] if budget is None else budget.spends
    if as_json:
        emit_json(
            {
                "data_sha256": digest,
                "ledger": str(path),
                "budget": None if budget is None else budget.total,
                "spent": 0.0 if budget is None else budget.spent,
                "remaining": None if budget is None else budget.remaining,
                "spends": [{"at": s.at, "query": s.query, "epsilon": s.epsilon} for s in spends],
            }
        )
        return
    if budget is None:
        click.echo(f"No budget set for {data} (SHA-256 {digest[:12]}) in {path}")
        return
    click.echo(
        f"Budget of {data} (SHA-256 {digest[:12]}): {budget.total:g}, spent {budget.spent:g}, "
        f"{budget.remaining:g} left"
    )
    for spend_ in spends:
        when = datetime.datetime.fromtimestamp(spend_.at, datetime.UTC).isoformat(
            timespec="seconds"
        )
        click.echo(f"  {when}  ε = {spend_.epsilon:g}  {spend_.query}")
