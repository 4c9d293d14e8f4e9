"""The curator's data: a CSV file with a header row, its column types and content hash."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deniable.aggregator.central.curator._where import Value

__all__ = ["TYPES", "CuratorError", "Table", "file_digest", "load_table", "parse_types"]

TYPES = ("int", "float", "str")
_INT = re.compile(r"[+-]?\d+")


class CuratorError(ValueError):
    """Bad input to a curator query (file, column, type, option): the message names it."""


def parse_types(text: str | None) -> dict[str, str]:
    """``age=int,dept=str`` as {column: type}; a bad pair or type is an error naming it."""
    declared: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        column, sep, kind = item.partition("=")
        column, kind = column.strip(), kind.strip()
        if not sep or not column:
            raise CuratorError(f"--types: expected COLUMN=TYPE, got {item.strip()!r}")
        if kind not in TYPES:
            raise CuratorError(
                f"--types: type of {column!r} must be int, float or str, got {kind!r}"
            )
        if column in declared:
            raise CuratorError(f"--types: column {column!r} is declared twice")
        declared[column] = kind
    return declared


def _number(text: str, kind: str) -> int | float | None:
    """The cell as an int or finite float (None for an empty cell); ValueError if it is not."""
    stripped = text.strip()
    if not stripped:
        return None
    if kind == "int":
        if not _INT.fullmatch(stripped):
            raise ValueError(stripped)
        return int(stripped)
    value = float(stripped)
    if not math.isfinite(value):
        raise ValueError(stripped)
    return value


def _infer(cells: list[str]) -> str:
    """Int if every non-empty cell is an integer, else float if every one is a number, else str."""
    present = [cell.strip() for cell in cells if cell.strip()]
    if not present:
        return "str"
    for kind in ("int", "float"):
        try:
            for cell in present:
                _number(cell, kind)
        except ValueError:
            continue
        return kind
    return "str"


@dataclass(frozen=True)
class Table:
    """The rows of a CSV file, typed by column.

    Attributes:
        name: the file's name as given (for messages).
        digest: SHA-256 of the file's bytes, hex: the key of its privacy budget.
        columns: the header's names, in order.
        types: each column's type (int, float or str).
        rows: one mapping per data row; empty numeric cells are None.
    """

    name: str
    digest: str
    columns: tuple[str, ...]
    types: Mapping[str, str]
    rows: tuple[Mapping[str, Value], ...]

    def column(self, name: str, option: str) -> str:
        """The type of column ``name``, else an error naming it and ``option``."""
        if name not in self.types:
            raise CuratorError(
                f"{option}: no column {name!r} in {self.name} (columns: {', '.join(self.columns)})"
            )
        return self.types[name]


def file_digest(path: Path) -> str:
    """SHA-256 of the file's bytes, hex: the key of the data set's privacy budget."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_table(path: Path, declared: Mapping[str, str] | None = None) -> Table:
    """Read a UTF-8 CSV file with a header row; infer the types ``declared`` does not give."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CuratorError(
            f"{path}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as error:
        raise CuratorError(f"{path}: not valid CSV ({error})") from None
    if not records:
        raise CuratorError(f"{path}: empty file (a header row is needed)")
    header = [name.strip() for name in records[0]]
    for index, name in enumerate(header):
        if not name:
            raise CuratorError(f"{path}: header column {index + 1} has no name")
        if name in header[:index]:
            raise CuratorError(f"{path}: header names column {name!r} twice")
    body = [(line, cells) for line, cells in enumerate(records[1:], start=2) if cells]
    for line, cells in body:
        if len(cells) != len(header):
            raise CuratorError(
                f"{path} line {line}: {len(cells)} fields, the header has {len(header)}"
            )
    declared = dict(declared or {})
    unknown = sorted(set(declared) - set(header))
    if unknown:
        raise CuratorError(
            f"--types: no column {unknown[0]!r} in {path} (columns: {', '.join(header)})"
        )
    types = {
        name: declared.get(name) or _infer([cells[i] for _, cells in body])
        for i, name in enumerate(header)
    }
    rows = []
    for line, cells in body:
        row: dict[str, Value] = {}
        for name, cell in zip(header, cells, strict=True):
            kind = types[name]
            if kind == "str":
                row[name] = cell
                continue
            try:
                row[name] = _number(cell, kind)
            except ValueError:
                raise CuratorError(
                    f"{path} line {line}: column {name!r} is {kind} but has {cell!r}"
                ) from None
        rows.append(row)
    digest = hashlib.sha256(data).hexdigest()
    return Table(str(path), digest, tuple(header), types, tuple(rows))
