"""The batch decoder: the vectorized fast path is taken, and agrees with the exact path."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator.storage._decode import (
    DecodedBatch,
    _decode_exact,
    _decode_uniform,
    decode_batch,
    decode_log,
    frame,
)
from deniable.aggregator.storage._log_format import COMPACT_UNIFORM, expand
from deniable.shared.errors import InvalidArgument, ResourceExhausted
from deniable.shared.wire.v1 import aggregator_pb2 as pb

ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
MAX = 10_000


def report(
    rid: str, bit: bool, survey: str = "s1", question: str = "q", alpha: float = 0.5
) -> pb.Report:
    return pb.Report(
        report_id=rid,
        survey_id=survey,
        question_id=question,
        mechanism=pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=alpha)),
        bit=bit,
    )


def encoded(reports: list[pb.Report]) -> bytes:
    return pb.SubmitReportsRequest(reports=reports).SerializeToString()


def listed(pair: tuple[Sequence[bytes], Sequence[bytes]]) -> tuple[list[bytes], list[bytes]]:
    """A (report ids, payloads) pair as two lists."""
    return list(pair[0]), list(pair[1])


def summary(batch: DecodedBatch) -> tuple[object, ...]:
    """Everything a decoded batch says, in comparable form."""
    every = np.arange(len(batch.report_ids))
    return (
        batch.size,
        list(batch.report_ids),
        list(batch.payloads),
        list(batch.positions),
        [
            (g.template.SerializeToString(deterministic=True), g.first, g.rows.tolist(),
             g.values.tolist())
            for g in batch.groups
        ],
        expand(batch.encode(every)),
        expand(batch.encode(every[::2])),
        listed(decode_log(batch.encode(every[::2]))),
    )  # fmt: skip


def uniform_batch(count: int, id_length: int = 32, seed: int = 1) -> list[pb.Report]:
    rng = np.random.default_rng(seed)
    letters = np.array(list(ID_ALPHABET))
    return [
        report("".join(rng.choice(letters, id_length)), bool(rng.integers(2))) for _ in range(count)
    ]


def test_uniform_batches_take_the_fast_path_and_match_the_exact_path() -> None:
    for count, id_length in [(1, 1), (2, 32), (1000, 32), (300, 127), (300, 128)]:
        data = encoded(uniform_batch(count, id_length))
        fast = _decode_uniform(data, MAX)
        assert fast is not None, (count, id_length)
        assert summary(fast) == summary(_decode_exact(data, MAX))
        row = fast.encode(np.arange(count))
        assert row[0] == COMPACT_UNIFORM
        assert expand(row) == data
        assert listed(decode_log(row)) == (list(fast.report_ids), list(fast.payloads))
    # The compact row keeps the shared bytes once: 11 header bytes, the stem (a record less
    # its 4 framing bytes, 32-byte id and bit byte), then 32 + 1 bytes per report.
    data = encoded(uniform_batch(1000, 32))
    fast = _decode_uniform(data, MAX)
    assert fast is not None
    record = len(data) // 1000
    assert len(fast.encode(np.arange(1000))) == 11 + (record - 4 - 32 - 1) + 1000 * 33


def test_what_the_fast_path_reads() -> None:
    reports = [report("a1", True), report("b2", False), report("c3", True)]
    batch = decode_batch(encoded(reports), MAX)
    assert list(batch.report_ids) == [b"a1", b"b2", b"c3"]
    assert [g.values.tolist() for g in batch.groups] == [[1, 0, 1]]
    assert batch.payloads[0] == batch.payloads[2] != batch.payloads[1]
    assert batch.payloads[1] == reports[1].SerializeToString(deterministic=True)[4:]
    logged = pb.SubmitReportsRequest.FromString(expand(batch.encode(np.array([0, 2]))))
    assert list(logged.reports) == [reports[0], reports[2]]
    assert listed(decode_log(batch.encode(np.array([1])))) == ([b"b2"], [batch.payloads[1]])


@pytest.mark.parametrize(
    "reports",
    [
        [report("a", True), report("bb", False)],  # ids of different lengths
        [report("a", True), report("b", True, question="other")],  # two questions
        [report("a", True), report("b", True, alpha=0.25)],  # two mechanisms
        [report("a", True), report("a", True)],  # a repeat
        [report("a", True), report("b!", True)],  # a bad id
        [report("a", True), pb.Report(report_id="b", survey_id="s1", question_id="q")],
    ],
    ids=["id-lengths", "questions", "mechanisms", "repeat", "bad-id", "missing-fields"],
)
def test_other_shapes_take_the_exact_path(reports: list[pb.Report]) -> None:
    data = encoded(reports)
    assert _decode_uniform(data, MAX) is None
    try:
        exact = summary(_decode_exact(data, MAX))
    except InvalidArgument:
        return
    assert summary(decode_batch(data, MAX)) == exact


@pytest.mark.parametrize("record", [1, 7, 39])
@pytest.mark.parametrize(
    ("offset", "value"),
    [(-1, 2), (-1, 255), (-2, 0x30), (-5, 0x01), (0, 0x0B), (1, 0x40), (6, ord("#"))],
    ids=["bit-2", "bit-255", "bit-tag", "stem", "reports-tag", "length", "id-byte"],
)
def test_every_record_is_checked_not_just_the_first(record: int, offset: int, value: int) -> None:
    """One changed byte in a later record: the layout check or the id check must see it."""
    data = bytearray(encoded(uniform_batch(40, id_length=10)))
    size = len(data) // 40
    data[record * size + offset % size] = value
    assert _decode_uniform(bytes(data), MAX) is None


def test_non_canonical_and_unknown_fields_take_the_exact_path() -> None:
    one = report("a", True)
    # Fields in reverse order: the same report, not in canonical layout.
    fields = [
        one.SerializeToString(deterministic=True)[i:j]
        for i, j in [(0, 3), (3, 7), (7, 10), (10, 23), (23, 25)]
    ]
    reordered = frame(b"".join(reversed(fields)))
    assert pb.SubmitReportsRequest.FromString(reordered).reports[0] == one
    unknown = frame(one.SerializeToString() + b"\xf8\x07\x01")  # field 127, varint 1
    bool_two = frame(one.SerializeToString()[:-1] + b"\x02")  # bit encoded as varint 2
    for data in (reordered, unknown, bool_two, reordered + reordered):
        assert _decode_uniform(data, MAX) is None
    for data in (reordered, unknown, bool_two):
        batch = decode_batch(data, MAX)
        assert batch.encode(np.arange(1)) == frame(one.SerializeToString(deterministic=True))


def test_size_limits() -> None:
    with pytest.raises(InvalidArgument, match="a batch needs at least one report"):
        decode_batch(b"", MAX)
    data = encoded(uniform_batch(11))
    with pytest.raises(ResourceExhausted, match="batch of 11 exceeds the limit of 10"):
        decode_batch(data, 10)
    with pytest.raises(InvalidArgument, match="not a valid SubmitReportsRequest"):
        decode_batch(b"\x0a\x05abc", MAX)


def test_identical_repeats_are_dropped_and_conflicts_named() -> None:
    batch = decode_batch(encoded([report("a", True), report("b", False), report("a", True)]), MAX)
    assert (batch.size, list(batch.report_ids), list(batch.positions)) == (3, [b"a", b"b"], [0, 1])
    with pytest.raises(InvalidArgument, match=r"reports\[2\].report_id: 'a' repeats reports\[0\]"):
        decode_batch(encoded([report("a", True), report("b", False), report("a", False)]), MAX)


ids = st.text(ID_ALPHABET, min_size=1, max_size=130)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(ids, st.booleans(), st.sampled_from(["s1", "s2"]), st.sampled_from(["q", "r"])),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from([0.5, 0.25, math.nan, 1.0]),
)
def test_fast_path_agrees_with_exact_path_on_valid_batches(
    rows: list[tuple[str, bool, str, str]], alpha: float
) -> None:
    data = encoded([report(r, b, s, q, alpha) for r, b, s, q in rows])
    try:
        exact: object = summary(_decode_exact(data, MAX))
    except InvalidArgument as error:
        exact = error.message
    fast = _decode_uniform(data, MAX)
    if fast is not None:
        assert summary(fast) == exact


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_fast_path_never_accepts_what_the_exact_path_reads_differently(data: st.DataObject) -> None:
    """Mutate byte columns of a uniform batch (all records alike, or one record)."""
    count, size = 4, len(encoded(uniform_batch(1, id_length=8)))
    records = np.frombuffer(encoded(uniform_batch(count, 8, seed=7)), np.uint8).reshape(count, -1)
    records = records.copy()
    for _ in range(data.draw(st.integers(1, 3))):
        column = data.draw(st.integers(0, size - 1))
        value = data.draw(st.integers(0, 255))
        if data.draw(st.booleans()):
            records[:, column] = value
        else:
            records[data.draw(st.integers(0, count - 1)), column] = value
    mutated = records.tobytes()
    fast = _decode_uniform(mutated, MAX)
    if fast is not None:
        assert summary(fast) == summary(_decode_exact(mutated, MAX))
