"""CSV and Parquet files through embedded DuckDB, locked to the one registered file."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
from duckdb.sqltypes import BIGINT

from deniable.aggregator.central.curator._base import CuratorError
from deniable.aggregator.central.curator.engine._ast import quote_identifier
from deniable.aggregator.central.curator.engine._query import BATCH, SqlEngine
from deniable.aggregator.central.curator.engine._sample import Sampler

__all__ = ["DEFAULT_MEMORY_LIMIT", "FILE_KINDS", "DuckDBEngine", "file_kind"]

DEFAULT_MEMORY_LIMIT = "1GB"
"""DuckDB's memory limit unless given: a fixed size, not a fraction of RAM, so that the
daemon's footprint is the same on every machine; larger work spills to the temp directory."""

FILE_KINDS = {
    ".csv": "CSV",
    ".tsv": "TSV",
    ".csv.gz": "CSV",
    ".tsv.gz": "TSV",
    ".parquet": "Parquet",
    ".pq": "Parquet",
}
_DECLARED = {"int": "BIGINT", "float": "DOUBLE", "str": "VARCHAR", "bool": "BOOLEAN"}
_SAMPLE = "__deniable_sample"

# DuckDB type -> (kind, cast or None). Casts keep comparisons from failing on any row.
_INTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT")
_TYPES: dict[str, tuple[str, str | None]] = {
    **{name: ("int", None) for name in _INTS},
    "UINTEGER": ("int", "BIGINT"),
    "UBIGINT": ("int", "HUGEINT"),
    "UHUGEINT": ("float", "DOUBLE"),
    "FLOAT": ("float", None),
    "DOUBLE": ("float", None),
    "VARCHAR": ("str", None),
    "BOOLEAN": ("bool", None),
    "DATE": ("str", "VARCHAR"),
    "TIME": ("str", "VARCHAR"),
    "TIMESTAMP": ("str", "VARCHAR"),
    "TIMESTAMP WITH TIME ZONE": ("str", "VARCHAR"),
    "UUID": ("str", "VARCHAR"),
}


def file_kind(path: Path) -> str:
    """'CSV', 'TSV' or 'Parquet' by the file's extension, else an error naming them."""
    name = path.name.lower()
    for suffix, kind in sorted(FILE_KINDS.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return kind
    raise CuratorError(
        f"--data: {path.name!r} is not a file DuckDB reads here: give one ending in "
        + ", ".join(FILE_KINDS)
    )


_REMEDIES = ("Column ", "The search space", "Possible", "*", "LINE ", "file =", "delimiter =")


def _first(error: Exception) -> str:
    """DuckDB's message without its list of remedies and settings: what went wrong, where."""
    kept = []
    for line in str(error).strip().splitlines():
        if line.strip().startswith(_REMEDIES):
            break
        if line.strip():
            kept.append(line.strip())
    return "; ".join(kept) or type(error).__name__


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _reader(path: Path, kind: str, types: Mapping[str, str] | None) -> str:
    if kind == "Parquet":
        if types:
            raise CuratorError("--types applies to CSV files only: Parquet files carry types")
        return f"read_parquet({_literal(str(path))})"
    # Inferred kinds are int, float or str: 'yes'/'no' stay text (DuckDB would guess
    # BOOLEAN, and then `hiv = 'yes'` would not type-check); --types declares the others.
    options = [
        "header = true",
        f"delim = {_literal(',' if kind == 'CSV' else chr(9))}",
        "auto_type_candidates = ['BIGINT', 'DOUBLE', 'VARCHAR']",
        # The header is the first line: DuckDB would otherwise skip lines until the rest
        # fits, and read a row with an extra field as the header, silently.
        "skip = 0",
    ]
    if types:
        declared = []
        for column, declared_kind in types.items():
            if declared_kind not in _DECLARED:
                raise CuratorError(
                    f"--types: type of {column!r} must be one of {list(_DECLARED)}, "
                    f"got {declared_kind!r}"
                )
            declared.append(f"{_literal(column)}: {_literal(_DECLARED[declared_kind])}")
        options.append("types = {" + ", ".join(declared) + "}")
    return f"read_csv({_literal(str(path))}, {', '.join(options)})"


class DuckDBEngine(SqlEngine):
    """A view over one CSV or Parquet file; the connection can read no other file.

    Opening registers the sampling function (OS CSPRNG), sets the memory limit, spill directory and
    threads, allows only the file (``allowed_paths``), then disables external access and
    locks the configuration: a statement cannot read or write any other file nor undo
    the settings. A CSV file is read through once on opening, so that a malformed cell
    fails there, never in a query. Each call runs on its own cursor: thread-safe.
    """

    dialect = "duckdb"
    source = '"__source"'

    def __init__(
        self,
        path: Path,
        *,
        types: Mapping[str, str] | None = None,
        memory_limit: str | None = None,
        temp_directory: Path | None = None,
        threads: int | None = None,
    ) -> None:
        path = Path(path).resolve()
        kind = file_kind(path)
        if not path.is_file():
            raise CuratorError(f"--data: no file {str(path)!r}")
        self.description = f"{path.name} ({kind})"
        self._own_temp = temp_directory is None
        self._temp = (
            Path(tempfile.mkdtemp(prefix="deniable-duckdb-")) if self._own_temp else temp_directory
        )
        config: dict[str, Any] = {
            "memory_limit": memory_limit or DEFAULT_MEMORY_LIMIT,
            "temp_directory": str(self._temp),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            # No aggregate needs row order: DuckDB may stream and spill more freely.
            "preserve_insertion_order": False,
        }
        if threads is not None:
            config["threads"] = threads
        self._lock = threading.Lock()
        self.sampler = Sampler()
        try:
            self._con = duckdb.connect(":memory:", config=config)
        except duckdb.Error as error:
            self._cleanup()
            raise CuratorError(f"--memory-limit/--threads: {error}") from None
        try:
            self._open(path, kind, types)
        except BaseException:
            self.close()
            raise

    def _open(self, path: Path, kind: str, types: Mapping[str, str] | None) -> None:
        con = self._con
        con.create_function(  # type: ignore[call-overload]
            _SAMPLE,
            self.sampler,
            [BIGINT, BIGINT],
            duckdb.list_type(BIGINT),
            type="arrow",
            side_effects=True,
        )
        reader = _reader(path, kind, types)
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()
        except duckdb.Error as error:
            option = "--types" if types and "types" in str(error).lower() else "--data"
            raise CuratorError(f"{option}: cannot read {path.name!r}: {_first(error)}") from None
        columns: dict[str, str] = {}
        selected = []
        for row in described:
            name, sql_type = str(row[0]), str(row[1])
            column_kind, cast = _TYPES.get(sql_type, (sql_type, None))
            if sql_type.startswith("DECIMAL"):
                column_kind, cast = "float", "DOUBLE"
            columns[name] = column_kind
            quoted = quote_identifier(name)
            selected.append(f"CAST({quoted} AS {cast}) AS {quoted}" if cast else quoted)
        self.columns = columns
        con.execute(f"CREATE VIEW {self.source} AS SELECT {', '.join(selected)} FROM {reader}")
        con.execute(f"SET allowed_paths = [{_literal(str(path))}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        if kind != "Parquet":
            every = ", ".join(f"count({quote_identifier(c)})" for c in columns)
            try:
                con.execute(f"SELECT count(*), {every} FROM {self.source}").fetchall()
            except duckdb.Error as error:
                raise CuratorError(f"--data: cannot read {path.name!r}: {_first(error)}") from None

    def collect(self, expr: str) -> str:
        return f"list({expr})"

    def choose(self, rows: str, n: str, k: int) -> str:
        return f"list_select({rows}, {_SAMPLE}({n}, {k}))"

    def present(self, column: str) -> str:
        quoted = quote_identifier(column)
        if self.columns[column] == "float":
            return f"({quoted} IS NOT NULL AND NOT isnan({quoted}))"
        return f"({quoted} IS NOT NULL)"

    def contribution(self, column: str, resolution: Fraction, lo: int, hi: int) -> str:
        scaled = (
            f"floor(CAST({quote_identifier(column)} AS DOUBLE) / {self.double(resolution)} + 0.5)"
        )
        return f"CAST(least(greatest({scaled}, {lo}), {hi}) AS BIGINT)"

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._con is None:
                raise CuratorError(f"{self.description} is closed")
            return self._con.cursor()

    def fetch_one(self, sql: str) -> tuple[Any, ...]:
        with self._cursor() as cursor:
            row = cursor.execute(sql).fetchone()
        assert row is not None
        return tuple(row)

    def fetch_stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        with self._cursor() as cursor:
            reader = cursor.sql(sql).to_arrow_reader(BATCH)
            for batch in reader:
                yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)

    def raw_connection(self) -> duckdb.DuckDBPyConnection:
        """The locked connection itself (for tests: what a statement could still do)."""
        return self._cursor()

    def close(self) -> None:
        with self._lock:
            con, self._con = self._con, None  # type: ignore[assignment]
        if con is not None:
            con.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._own_temp and self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
