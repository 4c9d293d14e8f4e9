"""Writers of an export's rows: CSV, JSON, JSON Lines and Parquet, streamed in bounded memory."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from deniable.aggregator.cli._common import jsonable
from deniable.aggregator.cli.export._rows import Column

__all__ = ["FORMATS", "PARQUET_EXTRA", "ROW_GROUP", "write_rows"]

FORMATS = ("csv", "json", "jsonl", "parquet")
PARQUET_EXTRA = "pip install 'deniable[parquet]'"
ROW_GROUP = 65_536
"""Rows per Parquet row group, and per chunk of any format held in memory at once."""


def _text(value: Any) -> str:
    """A CSV cell: empty for missing, true/false, JSON for a mapping, else the plain value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value)


def _csv(columns: Sequence[Column], rows: Iterable[list[Any]], out: IO[bytes]) -> int:
    """A header, then the rows; the csv module writes None as an empty cell and floats exactly."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([column.name for column in columns])
    shown = [index for index, column in enumerate(columns) if column.type == "value"]
    count = 0

    def cells() -> Iterator[list[Any]]:
        nonlocal count
        for row in rows:
            if shown:
                row = row.copy()
                for index in shown:
                    row[index] = _text(row[index])
            count += 1
            yield row

    writer.writerows(cells())
    text.flush()
    text.detach()
    return count


def _json(columns: Sequence[Column], rows: Iterable[list[Any]], out: IO[bytes], lines: bool) -> int:
    """One JSON array of objects (``lines`` false) or one object per line (JSON Lines)."""
    names = [column.name for column in columns]
    first, between, last = (b"", b"\n", b"\n") if lines else (b"[\n", b",\n", b"\n]\n")
    out.write(first)
    count = 0
    for row in rows:
        if count:
            out.write(between)
        document = jsonable(dict(zip(names, row, strict=True)))
        out.write(json.dumps(document, allow_nan=False, ensure_ascii=False).encode("utf-8"))
        count += 1
    out.write(last if count or not lines else b"")
    return count


def _parquet(columns: Sequence[Column], rows: Iterable[list[Any]], out: IO[bytes]) -> int:
    """Row groups of :data:`ROW_GROUP` rows; a ``value`` column holds the CSV cell's text."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"--format parquet needs pyarrow: {PARQUET_EXTRA}") from None
    types = {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "value": pa.string(),
    }
    schema = pa.schema([pa.field(column.name, types[column.type]) for column in columns])
    convert = [_text if column.type == "value" else None for column in columns]
    count = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        buffered: list[list[Any]] = []

        def flush() -> None:
            arrays = [
                [f(row[i]) for row in buffered] if f else [row[i] for row in buffered]
                for i, f in enumerate(convert)
            ]
            writer.write_table(pa.table(arrays, schema=schema))
            buffered.clear()

        for row in rows:
            buffered.append(row)
            count += 1
            if len(buffered) == ROW_GROUP:
                flush()
        if buffered or count == 0:
            flush()
    return count


def write_rows(
    file_format: str, columns: Sequence[Column], rows: Iterable[list[Any]], out: IO[bytes]
) -> int:
    """Write a header (where the format has one) and every row to ``out``; the row count.

    Raises:
        ValueError: Parquet without pyarrow installed (the message names the extra).
    """
    if file_format == "csv":
        return _csv(columns, rows, out)
    if file_format == "parquet":
        return _parquet(columns, rows, out)
    return _json(columns, rows, out, lines=file_format == "jsonl")
