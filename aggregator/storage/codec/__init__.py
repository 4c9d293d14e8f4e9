"""The batch codec: a received or stored batch of reports, decoded into columns and encoded."""

from __future__ import annotations

from deniable.aggregator.storage.codec._decode import (
    DecodedBatch,
    Group,
    decode_batch,
    decode_log,
    decode_row,
    frame,
)
from deniable.aggregator.storage.codec._fingerprint import Hasher, default_hasher, use_default
from deniable.aggregator.storage.codec._ids import (
    IdGroup,
    ReportIds,
    UniformPayloads,
    repeated_rows,
)
from deniable.aggregator.storage.codec._log_format import LogFormatError, expand

__all__ = [
    "DecodedBatch",
    "Group",
    "Hasher",
    "IdGroup",
    "LogFormatError",
    "ReportIds",
    "UniformPayloads",
    "decode_batch",
    "decode_log",
    "decode_row",
    "default_hasher",
    "expand",
    "frame",
    "repeated_rows",
    "use_default",
]
