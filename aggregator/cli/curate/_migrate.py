"""``curate migrate-ledger``: move an old file-keyed ledger's spends to a registered data set."""

from __future__ import annotations

import hashlib
from pathlib import Path

import click

from deniable.aggregator.cli._common import emit_json
from deniable.aggregator.cli.curate._errors import curator_errors

__all__ = ["legacy_refusal", "migrate_command"]


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def legacy_refusal(data: Path, dataset: str, old: Path | None = None) -> str | None:
    """The refusal when the old ledger still holds this file's spends, else None."""
    from deniable.aggregator.central.curator import ledger as ledgers

    path = old or ledgers.legacy_ledger_path()
    if not path.is_file() or not data.is_file():
        return None
    if not ledgers.needs_migration(path, _digest(data)):
        return None
    return (
        f"{path} (the old ledger, keyed by the file's SHA-256) holds spends of {data}; "
        f"move them to the data set first: deniable-aggregator curate migrate-ledger "
        f"{path} {data} --dataset {dataset}"
    )


@click.command("migrate-ledger")
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dataset", "dataset_name", required=True, help="The registered data set name.")
@click.option(
    "--db",
    "database",
    envvar="DENIABLE_AGGREGATOR_CURATE_DB",
    show_envvar=True,
    help="The custodian's ledger [default: sqlite:///$XDG_DATA_HOME/deniable/curator.db].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def migrate_command(
    old: Path, data: Path, dataset_name: str, database: str | None, as_json: bool
) -> None:
    """Move OLD's spends of the file DATA to the data set --dataset in the custodian's ledger.

    The old ledger (before 0.9) kept ε per file's SHA-256, so a changed byte gave a fresh
    budget. This registers the data set with the old total (if it is not registered),
    copies every spend as the custodian's, and marks the file's entry in OLD as moved, so
    it cannot be moved twice.
    """
    from deniable.aggregator.central.curator import ledger as ledgers

    with curator_errors():
        ledger = ledgers.open_ledger(database or ledgers.default_curator_url())
        try:
            result = ledgers.migrate_legacy(old, _digest(data), ledger, dataset_name)
        finally:
            ledger.close()
    document = {
        "old": str(old),
        "data": str(data),
        "dataset": result.dataset,
        "spends": result.spends,
        "epsilon_total": float(result.total),
        "epsilon_total_exact": str(result.total),
        "epsilon_spent": float(result.spent),
        "epsilon_spent_exact": str(result.spent),
        "registered": result.registered,
    }
    if as_json:
        emit_json(document)
    else:
        click.echo(
            f"moved {result.spends} spend(s), ε = {result.spent} of ε = {result.total}, from "
            f"{old} to data set {result.dataset!r}"
            + (" (registered with the old total)" if result.registered else "")
        )
