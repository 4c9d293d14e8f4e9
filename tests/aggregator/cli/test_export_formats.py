"""The export writers: every format holds the same rows, types and missing values."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd
import pytest

from deniable.aggregator.cli.export import _formats as _export_formats
from deniable.aggregator.cli.export._formats import FORMATS, write_rows
from deniable.aggregator.cli.export._rows import Column

COLUMNS = (
    Column("name", "str"), Column("count", "int"), Column("share", "float"),
    Column("value", "value"),
)  # fmt: skip
ROWS: list[list[Any]] = [
    ['a, "quoted"\nline', 3, 0.1 + 0.2, True],
    ["b", None, math.inf, {"a": 1, "b": 2, "value": 0}],
    [None, 0, None, "0a1f"],
    ["d", 2**53 + 1, -0.0, 0.25],
]


def _written(file_format: str, rows: list[list[Any]]) -> bytes:
    out = io.BytesIO()
    assert write_rows(file_format, COLUMNS, iter(rows), out) == len(rows)
    return out.getvalue()


def test_csv_cells_are_exact_and_a_missing_value_is_empty() -> None:
    text = _written("csv", ROWS).decode()
    frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    assert list(frame.columns) == ["name", "count", "share", "value"]
    assert frame.name[0] == 'a, "quoted"\nline'
    assert pd.isna(frame.name[2])
    assert frame.share[0] == 0.1 + 0.2
    assert frame.share[1] == math.inf
    assert list(frame.value) == ["true", '{"a":1,"b":2,"value":0}', "0a1f", "0.25"]
    assert text.splitlines()[-1].split(",")[1] == str(2**53 + 1)  # no float rounding


@pytest.mark.parametrize("lines", [False, True])
def test_json_keeps_native_values_and_writes_no_nan(lines: bool) -> None:
    text = _written("jsonl" if lines else "json", ROWS).decode()
    documents = [json.loads(line) for line in text.splitlines()] if lines else json.loads(text)
    assert documents[0] == {"name": ROWS[0][0], "count": 3, "share": 0.1 + 0.2, "value": True}
    assert documents[1]["share"] is None  # JSON has no infinity: null, as estimate --json
    assert documents[1]["value"] == {"a": 1, "b": 2, "value": 0}
    assert documents[3]["count"] == 2**53 + 1


def test_parquet_is_typed_in_row_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(_export_formats, "ROW_GROUP", 3)
    data = _written("parquet", ROWS * 2)
    table = pq.ParquetFile(io.BytesIO(data))
    assert table.metadata.num_row_groups == 3  # 8 rows in groups of 3
    assert [str(field.type) for field in table.schema_arrow] == [
        "string", "int64", "double", "string",
    ]  # fmt: skip
    frame = table.read().to_pandas()
    assert frame["count"][0] == 3
    assert pd.isna(frame["count"][1])
    assert frame["value"].tolist()[:4] == ["true", '{"a":1,"b":2,"value":0}', "0a1f", "0.25"]
    assert frame["share"][1] == math.inf
    assert frame["count"][3] == 2**53 + 1


@pytest.mark.parametrize("file_format", FORMATS)
def test_no_rows_is_a_valid_empty_table(file_format: str) -> None:
    if file_format == "parquet":
        pytest.importorskip("pyarrow")
    data = _written(file_format, [])
    if file_format == "csv":
        assert data == b"name,count,share,value\n"
    elif file_format == "json":
        assert json.loads(data) == []
    elif file_format == "jsonl":
        assert data == b""
    else:
        frame = pd.read_parquet(io.BytesIO(data))
        assert list(frame.columns) == ["name", "count", "share", "value"]
        assert len(frame) == 0
