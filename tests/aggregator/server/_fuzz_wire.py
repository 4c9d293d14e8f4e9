"""Hypothesis strategies at the wire level: mutated serializations and admin metadata."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.aggregator.server._fuzz_strategies import printable
from tests.conftest import ADMIN_TOKEN

# --- wire-level mutation -------------------------------------------------------------------


def varint(value: int, pad: int = 0) -> bytes:
    """``value`` as a varint, made ``pad`` bytes longer than needed (overlong) if asked."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value == 0 and pad == 0:
            out.append(byte)
            return bytes(out)
        if value == 0:
            pad -= 1
        out.append(byte | 0x80)


def _field(number: int, wire_type: int, payload: bytes, pad: int = 0) -> bytes:
    return varint(number << 3 | wire_type, pad) + payload


@st.composite
def stray_fields(draw: st.DrawFn) -> bytes:
    """One field of any number and wire type (unknown fields, wrong wire types, groups)."""
    number = draw(st.one_of(st.integers(1, 10), st.integers(11, 2**29 - 1)))
    wire_type = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]))
    payload = {
        0: varint(draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 3))),
        1: draw(st.binary(min_size=8, max_size=8)),
        5: draw(st.binary(min_size=4, max_size=4)),
    }.get(wire_type)
    if payload is None:  # length-delimited (maybe lying about its length), groups, invalid
        body = draw(st.binary(max_size=16))
        payload = (
            varint(len(body) + draw(st.sampled_from([0, 0, 1, -1, 2**40])) if body else 0) + body
        )
    return _field(number, wire_type, payload, draw(st.integers(0, 2)))


def top_level_fields(data: bytes) -> list[tuple[int, bytes]] | None:
    """A well-formed message's top-level fields as (tag, everything after the tag), or None."""
    fields, pos = [], 0
    while pos < len(data):
        tag, pos = _read(data, pos)
        wire_type, start = tag & 7, pos
        if wire_type == 0:
            _, pos = _read(data, pos)
        elif wire_type == 2:
            length, pos = _read(data, pos)
            pos += length
        else:
            pos += {1: 8, 5: 4}.get(wire_type, len(data))
        if pos > len(data):
            return None
        fields.append((tag, data[start:pos]))
    return fields


def _read(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        value |= (data[pos] & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if data[pos - 1] < 0x80:
            return value, pos
    return value, len(data) + 1


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` (a valid serialization) changed by 1..3 field-level or byte-level edits."""
    for _ in range(draw(st.integers(1, 3))):
        op = draw(
            st.sampled_from(
                [
                    "flip",
                    "truncate",
                    "insert",
                    "delete",
                    "repeat",
                    "stray",
                    "overlong",
                    "reorder",
                    "concat",
                ]
            )
        )
        at = draw(st.integers(0, len(data)))
        end = draw(st.integers(at, len(data)))
        fields = top_level_fields(data)
        if op == "flip" and data:
            i = min(at, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ (1 << draw(st.integers(0, 7)))]) + data[i + 1 :]
        elif op == "truncate":
            data = data[:at]
        elif op == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
        elif op == "delete":
            data = data[:at] + data[end:]
        elif op == "repeat":
            data = data[:end] + data[at:end] + data[end:]
        elif op == "stray":  # a whole field after the others, or anywhere in broken bytes
            at = len(data) if fields is not None else at
            data = data[:at] + draw(stray_fields()) + data[at:]
        elif op in ("overlong", "reorder") and fields:
            if op == "reorder":
                fields = draw(st.permutations(fields))
            pad = draw(st.integers(1, 4))
            data = b"".join(varint(tag, pad) + rest for tag, rest in fields)
        elif op == "concat":
            data = data + data  # merging a message into itself
    return data


# --- authorization metadata ----------------------------------------------------------------

Metadata = tuple[tuple[str, str | bytes], ...]
_WRONG_VALUES = [
    "",
    "Bearer",
    "Bearer ",
    f"bearer {ADMIN_TOKEN}",
    f"Bearer  {ADMIN_TOKEN}",
    f"Bearer {ADMIN_TOKEN}x",
    f"Bearer {ADMIN_TOKEN[:-1]}",
    ADMIN_TOKEN,
    f"Basic {ADMIN_TOKEN}",
    f"Bearer {ADMIN_TOKEN.upper()}",
    f"Token {ADMIN_TOKEN}",
    f"Bearer {ADMIN_TOKEN} ",
    f"Bearer {ADMIN_TOKEN},Bearer {ADMIN_TOKEN}",
]


@st.composite
def bad_metadata(draw: st.DrawFn) -> Metadata | None:
    """Missing, wrong or malformed admin credentials: never exactly the right one."""
    wrong = st.one_of(
        st.sampled_from(_WRONG_VALUES),
        printable(64).map(lambda s: f"Bearer {s}"),
        printable(64),
        st.sampled_from([4_000, 9_000, 20_000]).map(lambda n: "Bearer " + "A" * n),
    ).filter(lambda value: value != f"Bearer {ADMIN_TOKEN}")
    shape = draw(st.sampled_from(["missing", "wrong", "other-key", "binary", "two-wrong"]))
    if shape == "missing":
        return None
    if shape == "other-key":
        key = draw(st.sampled_from(["x-authorization", "token", "authorisation", "bearer"]))
        return ((key, f"Bearer {ADMIN_TOKEN}"),)
    if shape == "binary":
        return (("authorization-bin", f"Bearer {ADMIN_TOKEN}".encode()),)
    if shape == "two-wrong":
        return (("authorization", draw(wrong)), ("authorization", draw(wrong)))
    return (("authorization", draw(wrong)),)
