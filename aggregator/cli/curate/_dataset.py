"""The data set options (source, unit, neighbours, budget, ledger) and opening its service."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from deniable.aggregator.central import curator
from deniable.aggregator.cli._common import PREFIX

__all__ = ["dataset_options", "open_service", "parse_types"]

F = TypeVar("F", bound=Callable[..., Any])
VARIABLE = f"{PREFIX}_CURATE"
TYPES = ("int", "float", "str", "bool")


def parse_types(text: str | None) -> dict[str, str]:
    """``age=int,dept=str`` as {column: type}; a bad pair or type is an error naming it."""
    declared: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        column, sep, kind = item.partition("=")
        column, kind = column.strip(), kind.strip()
        if not sep or not column:
            raise curator.CuratorError(f"--types: expected COLUMN=TYPE, got {item.strip()!r}")
        if kind not in TYPES:
            raise curator.CuratorError(
                f"--types: type of {column!r} must be int, float, str or bool, got {kind!r}"
            )
        if column in declared:
            raise curator.CuratorError(f"--types: column {column!r} is declared twice")
        declared[column] = kind
    return declared


def _option(name: str, *dest: str, **kwargs: Any) -> Callable[[F], F]:
    variable = f"{VARIABLE}_{name.removeprefix('--').replace('-', '_').upper()}"
    return click.option(name, *dest, envvar=variable, show_envvar=True, **kwargs)


def dataset_options(*, server: bool) -> Callable[[F], F]:
    """The options that open a data set: ``curate serve`` and the in-process queries."""
    options = [
        *(
            [_option("--data", required=True, metavar="SOURCE", help="A .csv/.tsv/.csv.gz or "
                     ".parquet file, or a postgresql:// URL (with --table).")]
            if server
            else []
        ),
        _option("--table", help="The PostgreSQL table or view (schema.name) of a postgresql:// "
                "source; the queries run in PostgreSQL."),
        _option("--types", help="Declare CSV column types, e.g. age=int,dept=str (int, float, "
                "str, bool); the rest are inferred by DuckDB."),
        _option("--dataset", "dataset_name", help="The registered name the budget is kept under "
                "(default: the file's name without extension, or the table's name). The "
                "budget follows the name, never the file's bytes."),
        _option("--privacy-unit", help="The column naming each row's person (or household...): "
                "neighbouring data sets differ in all of one unit's rows. Without it each row "
                "is a unit, and a person with k rows is protected at k·ε."),
        _option("--max-contributions", type=int, default=1, show_default=True,
                help="K: the most rows of one unit a query uses (chosen uniformly at random "
                "with the OS CSPRNG when it has more); sensitivities are K times a row's."),
        _option("--neighbours", type=click.Choice(curator.NEIGHBOURS), default="add-remove",
                show_default=True, help="add-remove: a unit added or removed (the number of "
                "rows is private); replace: a unit changed (the number of rows is public)."),
        _option("--budget", type=float, help="The data set's total ε, set when it is first "
                "registered; it cannot change afterwards (then optional)."),
        _option("--delta" if server else "--budget-delta", "delta", type=float, default=None,
                help="The data set's total δ, set with its budget (default 0; key selections, "
                "histograms over an unknown domain, need some)."),
        _option("--db", "database", help="The custodian's ledger: sqlite:///PATH or "
                "postgresql://... [default: sqlite:///$XDG_DATA_HOME/deniable/curator.db]"),
        *(
            []
            if server
            else [click.option("--ledger", "retired_ledger", type=click.Path(path_type=Path),
                               show_envvar=True,
                               help="Retired: budgets live in the custodian's ledger (--db), "
                               "keyed by the data set's name. Given an old ledger file, names "
                               "the command that moves its spends (curate migrate-ledger).")]
        ),
        _option("--memory-limit", help="DuckDB's memory limit for a file source, e.g. 4GB "
                "[default: 1GB]; larger work spills to --temp-directory."),
        _option("--temp-directory", type=click.Path(file_okay=False, path_type=Path),
                help="Where DuckDB spills (default: its own, beside nothing of yours)."),
    ]  # fmt: skip

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def _default_name(source: str, table: str | None) -> str:
    if table:
        return table.rsplit(".", 1)[-1]
    name = Path(source).name
    for suffix in (".csv.gz", ".csv", ".tsv", ".parquet", ".pq"):
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def open_service(options: Mapping[str, Any], *, seeded: bool = False) -> curator.CuratorService:
    """Open the engine and the ledger, register the data set, and return its service.

    Errors (a source that cannot be read, a unit column that is not there, a budget
    that differs from the registered one) are one line and exit 2.
    """
    from deniable.aggregator.central.curator import engine as engines
    from deniable.aggregator.central.curator import ledger as ledgers
    from deniable.aggregator.cli.curate._errors import curator_errors

    with curator_errors():
        source = str(options["data"])
        table = options.get("table")
        name = options.get("dataset_name") or _default_name(source, table)
        curator.check_totals(options.get("budget"), options.get("delta"))
        _refuse_old_ledger(options, name)
        engine = engines.open_engine(
            source,
            table=table,
            types=parse_types(options.get("types")),
            memory_limit=options.get("memory_limit"),
            temp_directory=options.get("temp_directory"),
        )
        try:
            unit = curator.PrivacyUnit(options.get("privacy_unit"), options["max_contributions"])
            dataset = curator.Dataset(
                name,
                engine,
                unit,
                options["neighbours"],
            )
            if seeded:  # NOT private: no ledger is read or written
                return curator.CuratorService(dataset, None)
            url = options.get("database") or ledgers.default_curator_url()
            if options.get("budget") is None and _missing_sqlite(url):
                raise curator.CuratorError(
                    f"no privacy budget is set for data set {name!r}: give --budget E (the "
                    "total ε all its queries may spend; it cannot change afterwards)"
                )
            ledger = ledgers.open_ledger(url)
        except BaseException:
            engine.close()
            raise
        try:
            curator.register_dataset(ledger, dataset, options.get("budget"), options.get("delta"))
        except BaseException:
            engine.close()
            ledger.close()
            raise
    return curator.CuratorService(dataset, ledger)


def _missing_sqlite(url: str) -> bool:
    """True for a SQLite ledger file that does not exist yet (it registers nothing)."""
    return url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists()


def _refuse_old_ledger(options: Mapping[str, Any], name: str) -> None:
    """The old file-keyed ledger: refused, naming the command that moves it."""
    from deniable.aggregator.cli.curate._migrate import legacy_refusal

    data = Path(str(options["data"]))
    old = options.get("retired_ledger")
    if old is not None:
        raise curator.CuratorError(
            "--ledger is gone: the budget is kept by the custodian's ledger (--db), keyed "
            "by the data set's name, not by the file; move an old ledger with: "
            f"deniable-aggregator curate migrate-ledger {old} {data} --dataset {name}"
        )
    refusal = legacy_refusal(data, name)
    if refusal is not None:
        raise curator.CuratorError(refusal)
