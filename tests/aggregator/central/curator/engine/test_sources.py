"""Opening sources: DuckDB locked to its one file, PostgreSQL tables, types and refusals."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deniable.aggregator.central.curator._base import CuratorError, PrivacyUnit
from deniable.aggregator.central.curator.engine import (
    ConditionError,
    open_engine,
    parse_condition,
)
from deniable.aggregator.central.curator.engine._duckdb import DuckDBEngine
from deniable.aggregator.central.curator.engine._postgres import parse_table


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "staff.csv"
    path.write_text("pid,age,dept\n1,30,hr\n2,41,it\n")
    return path


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "COPY (SELECT 1) TO '{tmp}/out.csv'",
        "ATTACH '{tmp}/other.db'",
        "INSTALL httpfs",
    ],
)
def test_duckdb_reads_no_other_file(csv_file: Path, statement: str) -> None:
    with DuckDBEngine(csv_file) as opened:
        assert isinstance(opened, DuckDBEngine)
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            opened.raw_connection().execute(statement.format(tmp=csv_file.parent))


@pytest.mark.parametrize(
    "setting",
    [
        "SET enable_external_access = true",
        "SET allowed_paths = ['/etc/passwd']",
        "SET memory_limit = '100GB'",
    ],
)
def test_duckdb_settings_are_locked(csv_file: Path, setting: str) -> None:
    with DuckDBEngine(csv_file) as opened:
        assert isinstance(opened, DuckDBEngine)
        with pytest.raises(duckdb.Error, match="configuration has been locked"):
            opened.raw_connection().execute(setting)
        assert opened.row_count() == 2


def test_file_kinds_are_named(tmp_path: Path) -> None:
    with pytest.raises(CuratorError, match=r"--data: 'staff.xlsx' .* \.csv, \.tsv, \.csv\.gz"):
        open_engine(str(tmp_path / "staff.xlsx"))
    with pytest.raises(CuratorError, match="--data: no file"):
        open_engine(str(tmp_path / "missing.parquet"))


def test_tsv_and_declared_types(tmp_path: Path) -> None:
    path = tmp_path / "staff.tsv"
    path.write_text("pid\tcode\n1\t007\n2\t010\n")
    with open_engine(str(path), types={"code": "str"}) as engine:
        assert engine.columns == {"pid": "int", "code": "str"}
        assert engine.count(parse_condition("code = '007'", engine.columns), PrivacyUnit()) == 1
    with pytest.raises(CuratorError, match="--types: type of 'code' must be one of"):
        open_engine(str(path), types={"code": "date"})
    with pytest.raises(CuratorError, match="--types"):
        open_engine(str(path), types={"nope": "int"})


def test_a_malformed_csv_fails_on_opening_not_in_a_query(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("pid,age\n" + "".join(f"{i},{i}\n" for i in range(30_000)) + "7,old\n")
    with pytest.raises(CuratorError, match=r"--data: cannot read 'bad\.csv'"):
        open_engine(str(path), types={"age": "int"})


def test_parquet_types_map_to_kinds(tmp_path: Path) -> None:
    path = tmp_path / "types.parquet"
    table = pa.table(
        {
            "small": pa.array([1, 2], pa.int16()),
            "big": pa.array([2**64 - 1, 3], pa.uint64()),
            "amount": pa.array([Decimal("1.50"), Decimal("2.25")], pa.decimal128(10, 2)),
            "day": pa.array([datetime.date(2024, 1, 2), None], pa.date32()),
            "blob": pa.array([b"x", b"y"], pa.binary()),
        }
    )
    pq.write_table(table, path)
    with open_engine(str(path)) as engine:
        assert engine.columns == {
            "small": "int",
            "big": "int",
            "amount": "float",
            "day": "str",
            "blob": "BLOB",
        }
        unit = PrivacyUnit()
        assert engine.count(parse_condition("big > -1", engine.columns), unit) == 2
        assert engine.count(parse_condition("day = '2024-01-02'", engine.columns), unit) == 1
        assert engine.sum("amount", Fraction(1, 4), 0, 100, None, unit).units == 15
        with pytest.raises(ConditionError, match="column 'blob' has type BLOB"):
            parse_condition("blob IS NULL", engine.columns)


def test_a_small_memory_limit_spills_to_the_temp_directory(tmp_path: Path) -> None:
    path = tmp_path / "many.parquet"
    n = 300_000
    pq.write_table(pa.table({"pid": pa.array(range(n)), "v": pa.array(range(n))}), path)
    spill = tmp_path / "spill"
    spill.mkdir()
    with open_engine(str(path), memory_limit="64MB", temp_directory=spill, threads=1) as engine:
        assert engine.count(None, PrivacyUnit("pid", 1)) == n
        got = engine.sum("v", Fraction(1), 0, 10, None, PrivacyUnit("pid", 2))
        assert got.present == n
    assert spill.exists()


def test_private_temp_directory_is_removed_on_close(csv_file: Path) -> None:
    engine = DuckDBEngine(csv_file)
    temp = engine._temp
    assert temp is not None
    assert temp.exists()
    engine.close()
    assert not temp.exists()
    with pytest.raises(CuratorError, match="closed"):
        engine.row_count()


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("staff", (None, "staff")),
        ("Public.Staff", ("public", "staff")),
        ('"My Schema"."a""b"', ("My Schema", 'a"b')),
    ],
)
def test_parse_table(text: str, parsed: tuple[str | None, str]) -> None:
    assert parse_table(text) == parsed


@pytest.mark.parametrize("text", ["", "a.b.c", "staff; drop table x", "x y", None])
def test_parse_table_refuses(text: str | None) -> None:
    with pytest.raises(CuratorError, match="--table"):
        parse_table(text)


def test_options_belong_to_their_source(csv_file: Path) -> None:
    with pytest.raises(CuratorError, match="--table applies to a PostgreSQL source"):
        open_engine(str(csv_file), table="staff")
    with pytest.raises(CuratorError, match="--types applies to files"):
        open_engine("postgresql://localhost/db", table="t", types={"a": "int"})


def test_postgres_types_and_missing_table(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        conn.execute(
            'CREATE SCHEMA hr; CREATE TABLE hr."Staff" (id uuid, born date, amount numeric, '
            "code char(3), doc jsonb, n smallint)"
        )
        conn.execute(
            "INSERT INTO hr.\"Staff\" VALUES (%s, '2001-02-03', 1e400, 'ab', '{}', 1), "
            "(%s, NULL, 2.5, 'cd', NULL, NULL)",
            (uuid.uuid4(), uuid.uuid4()),
        )
    with pytest.raises(CuratorError, match="--table: no table or view"):
        open_engine(postgres_url, table="hr.staff")
    with open_engine(postgres_url, table='hr."Staff"') as engine:
        assert engine.columns == {
            "id": "str",
            "born": "str",
            "amount": "float",
            "code": "str",
            "doc": "jsonb",
            "n": "int",
        }
        unit = PrivacyUnit()
        assert engine.count(parse_condition("born = '2001-02-03'", engine.columns), unit) == 1
        assert engine.count(parse_condition("code = 'ab'", engine.columns), unit) == 1
        # NUMERIC is summed in exact decimal: 1e400 clamps to the bound, 2.5 rounds to 3
        assert engine.sum("amount", Fraction(1), 0, 10, None, unit).units == 13
        assert "hr" in engine.description
        assert "Staff" in engine.description
