"""The batch decoder: the vectorized fast path is taken, and agrees with the exact path."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator.storage.codec._decode import (
    DecodedBatch,
    decode_batch,
    decode_exact,
    decode_log,
    decode_vectorized,
    frame,
)
from deniable.aggregator.storage.codec._decode_fast import MAX_TEMPLATES, _frame_starts
from deniable.aggregator.storage.codec._log_format import COMPACT_UNIFORM, expand
from deniable.shared.errors import InvalidArgument, ResourceExhausted
from deniable.shared.wire.v1 import aggregator_pb2 as pb

ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
MAX = 10_000
KINDS = ("bit", "option", "bits", "hashed", "number", "encoded")


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


def valued(
    rid: str, kind: str, value: object, question: str = "q", survey: str = "s1"
) -> pb.Report:
    """A report with any kind of value (the decoder does not match kinds to mechanisms)."""
    mechanism = {
        "bit": pb.Mechanism(randomized_response=pb.RandomizedResponse(alpha=0.5)),
        "option": pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.25)),
        "option_fixed": pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.25)),
        "bits": pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25)),
        "hashed": pb.Mechanism(olh=pb.OptimizedLocalHashing(g=4, alpha=0.3)),
        "number": pb.Mechanism(duchi=pb.Duchi(bound=2.0)),
        "encoded": pb.Mechanism(
            registered=pb.RegisteredMechanism(name="custom", parameters={"p": 0.5})
        ),
    }[kind]
    out = pb.Report(report_id=rid, survey_id=survey, question_id=question, mechanism=mechanism)
    if kind == "hashed":
        assert isinstance(value, tuple)
        a, b, v, *fixed = value  # (a, b, value), or (a, b, value_fixed, "fixed")
        hashed = pb.HashedOption(a=a, b=b, **{"value_fixed" if fixed else "value": v})
        out.hashed.CopyFrom(hashed)
    else:
        setattr(out, kind, value)
    return out


def encoded(reports: list[pb.Report]) -> bytes:
    return pb.SubmitReportsRequest(reports=reports).SerializeToString()


def listed(pair: tuple[Sequence[bytes], Sequence[bytes]]) -> tuple[list[bytes], list[bytes]]:
    """A (report ids, payloads) pair as two lists."""
    return list(pair[0]), list(pair[1])


def _plain(values: object) -> object:
    if isinstance(values, np.ndarray):
        assert values.dtype in (np.uint8, np.int64, np.uint64, np.float64)
        return (str(values.dtype), values.tobytes(), values.shape)
    assert isinstance(values, list)
    assert all(isinstance(v, bytes) for v in values)
    return values


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
             _plain(g.values))
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


def mixed_batch(count: int, seed: int = 2) -> list[pb.Report]:
    """Reports of every kind, interleaved, with random ids of two lengths."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        rid = f"{int(rng.integers(2**62)):x}-{i}"
        value: object = {
            "bit": bool(rng.integers(2)),
            "option": int(rng.integers(300)),
            "bits": bytes(rng.integers(256, size=8, dtype=np.uint8)),
            "hashed": (*(int(x) for x in rng.integers(1, 2**61 - 1, size=2)), int(rng.integers(4))),
            "number": float(rng.normal()),
            "encoded": bytes(rng.integers(256, size=int(rng.integers(0, 5)), dtype=np.uint8)),
        }[kind]
        out.append(valued(rid, kind, value, question=f"q{i % 4}"))
    return out


def test_uniform_batches_take_the_fast_path_and_match_the_exact_path() -> None:
    for count, id_length in [(1, 1), (2, 32), (1000, 32), (300, 127), (300, 128)]:
        data = encoded(uniform_batch(count, id_length))
        fast = decode_vectorized(data, MAX)
        assert fast is not None, (count, id_length)
        assert summary(fast) == summary(decode_exact(data, MAX))
        row = fast.encode(np.arange(count))
        assert row[0] == COMPACT_UNIFORM
        assert expand(row) == data
        assert listed(decode_log(row)) == (list(fast.report_ids), list(fast.payloads))
    # The compact row keeps the shared bytes once: 11 header bytes, the stem (a record less
    # its 4 framing bytes, 32-byte id and bit byte), then 32 + 1 bytes per report.
    data = encoded(uniform_batch(1000, 32))
    fast = decode_vectorized(data, MAX)
    assert fast is not None
    record = len(data) // 1000
    assert len(fast.encode(np.arange(1000))) == 11 + (record - 4 - 32 - 1) + 1000 * 33


def test_mixed_batches_take_the_fast_path_and_match_the_exact_path() -> None:
    for count in (1, 7, 600):
        data = encoded(mixed_batch(count))
        fast = decode_vectorized(data, MAX)
        assert fast is not None, count
        assert summary(fast) == summary(decode_exact(data, MAX))
        if count > 1:  # canonical frames of several shapes: logged as received
            assert fast.encode(np.arange(count)) == data


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


def test_what_the_fast_path_reads_from_each_kind_of_value() -> None:
    reports = [
        valued("n1", "number", -0.25),
        valued("o1", "option", 5, "c"),
        valued("o2", "option", 300, "c"),  # a two-byte varint: another layout, same group
        valued("h1", "hashed", (7, 2**61 - 2, 0), "h"),  # value 0: omitted from the encoding
        valued("h2", "hashed", (1, 2, 3), "h"),
        valued("b1", "bits", b"\x05\x00", "u"),
        valued("e1", "encoded", b"", "x"),
        valued("e2", "encoded", b"xyz", "x"),
        valued("n2", "number", math.inf),
    ]
    batch = decode_vectorized(encoded(reports), MAX)
    assert batch is not None
    assert [(g.template.question_id, g.rows.tolist()) for g in batch.groups] == [
        ("q", [0, 8]), ("c", [1, 2]), ("h", [3, 4]), ("u", [5]), ("x", [6, 7])
    ]  # fmt: skip
    numbers, options, hashed, bits, extra = (g.values for g in batch.groups)
    assert (numbers.dtype, numbers.tolist()) == (np.float64, [-0.25, math.inf])
    assert (options.dtype, options.tolist()) == (np.int64, [5, 300])
    assert (hashed.dtype, hashed.tolist()) == (np.uint64, [[7, 2**61 - 2, 0], [1, 2, 3]])
    assert (bits, extra) == ([b"\x05\x00"], [b"", b"xyz"])
    assert summary(batch) == summary(decode_exact(encoded(reports), MAX))


def test_constant_size_values_take_the_fast_path_beside_older_ones() -> None:
    """option_fixed and hashed with value_fixed (current clients), option and value (older)."""
    fixed = [
        valued("f1", "option_fixed", 0, "c"),
        valued("f2", "option_fixed", 1023, "c"),
        valued("f3", "option_fixed", 2**32 - 1, "c"),  # out of range: the mechanism decides
        valued("g1", "hashed", (0, 0, 0, "fixed"), "h"),  # every field present, though 0
        valued("g2", "hashed", (2**61 - 2, 5, 2**32 - 1, "fixed"), "h"),
    ]
    assert {r.ByteSize() for r in fixed[:3]} == {fixed[0].ByteSize()}
    assert fixed[3].ByteSize() == fixed[4].ByteSize()
    older = [valued("o1", "option", 7, "c"), valued("h1", "hashed", (3, 4, 0), "h")]
    reports = [*fixed, *older]
    batch = decode_vectorized(encoded(reports), MAX)
    assert batch is not None  # option and option_fixed: two groups; hashed: one, either way
    assert [(g.template.question_id, g.rows.tolist()) for g in batch.groups] == [
        ("c", [0, 1, 2]), ("h", [3, 4, 6]), ("c", [5])
    ]  # fmt: skip
    options, hashed, old_options = (g.values for g in batch.groups)
    assert (options.dtype, options.tolist()) == (np.int64, [0, 1023, 2**32 - 1])
    assert (hashed.dtype, hashed.tolist()) == (
        np.uint64, [[0, 0, 0], [2**61 - 2, 5, 2**32 - 1], [3, 4, 0]]
    )  # fmt: skip
    assert (old_options.dtype, old_options.tolist()) == (np.int64, [7])
    assert summary(batch) == summary(decode_exact(encoded(reports), MAX))
    assert decode_vectorized(encoded(fixed[3:]), MAX) is not None  # one size: one reshape


def test_a_hash_value_sent_twice_is_refused_naming_both_fields() -> None:
    both = valued("a", "hashed", (1, 2, 3, "fixed"), "h")
    both.hashed.value = 4
    message = (
        r"^reports\[0\]\.hashed\.value: 4 sent together with hashed\.value_fixed; "
        r"a report carries one hash value$"
    )
    with pytest.raises(InvalidArgument, match=message):
        decode_batch(encoded([both]), MAX)


@pytest.mark.parametrize(
    "reports",
    [
        [report("a", True), report("a", True)],  # a repeat
        [report("a", True), report("b!", True)],  # a bad id
        [report("a", True), pb.Report(report_id="b", survey_id="s1", question_id="q")],
        [valued("a", "option", 1), valued("b", "number", 1.0), valued("a", "option", 1)],
    ],
    ids=["repeat", "bad-id", "missing-fields", "mixed-repeat"],
)
def test_other_shapes_take_the_exact_path(reports: list[pb.Report]) -> None:
    data = encoded(reports)
    assert decode_vectorized(data, MAX) is None
    try:
        exact = summary(decode_exact(data, MAX))
    except InvalidArgument:
        return
    assert summary(decode_batch(data, MAX)) == exact


def test_more_shapes_than_the_limit_take_the_exact_path() -> None:
    shapes = [report(f"r{i}", True, question=f"q{i}") for i in range(MAX_TEMPLATES + 1)]
    assert decode_vectorized(encoded(shapes[:-1]), MAX) is not None
    assert decode_vectorized(encoded(shapes), MAX) is None
    assert summary(decode_batch(encoded(shapes), MAX)) == summary(
        decode_exact(encoded(shapes), MAX)
    )


def _with_value_bytes(one: pb.Report, kind_tag: bytes, value: bytes) -> bytes:
    """``one`` (canonical, value last) with its value field replaced by raw bytes."""
    head = one.SerializeToString(deterministic=True)
    tail = pb.Report(**{str(one.WhichOneof("value")): getattr(one, str(one.WhichOneof("value")))})
    head = head[: len(head) - len(tail.SerializeToString(deterministic=True))]
    return frame(head + kind_tag + value)


@pytest.mark.parametrize(
    ("kind", "tag", "value"),
    [
        ("option", b"\x30", b"\x85\x00"),  # 5 as an overlong varint
        ("option", b"\x30", b"\x80\x80\x80\x80\x10"),  # 2^32: protobuf keeps the low 32 bits
        ("bit", b"\x28", b"\x02"),  # a bool encoded as 2
        ("hashed", b"\x42", b"\x12\x11\x01" + bytes(7) + b"\x09\x01" + bytes(7)),  # b, a
        ("hashed", b"\x42", b"\x02\x18\x00"),  # an explicit value = 0 (no presence)
    ],
    ids=["overlong", "truncated", "bool-2", "hashed-b-before-a", "hashed-value-0"],
)
def test_non_canonical_values_take_the_exact_path(kind: str, tag: bytes, value: bytes) -> None:
    one = valued("a", kind, {"option": 5, "bit": True, "hashed": (1, 1, 1)}[kind])
    odd = _with_value_bytes(one, tag, value)
    good = frame(valued("b", kind, {"option": 5, "bit": True, "hashed": (1, 1, 1)}[kind])
                 .SerializeToString(deterministic=True))  # fmt: skip
    for data in (odd, good + odd, odd + good):
        assert decode_vectorized(data, MAX) is None
        batch = decode_batch(data, MAX)  # parsed and logged in canonical form
        row = pb.SubmitReportsRequest.FromString(
            expand(batch.encode(np.arange(len(batch.report_ids))))
        )
        assert [r.SerializeToString(deterministic=True) for r in row.reports] == [
            r.SerializeToString(deterministic=True)
            for r in pb.SubmitReportsRequest.FromString(data).reports
        ]


@pytest.mark.parametrize("record", [1, 7, 39])
@pytest.mark.parametrize(
    ("offset", "value"),
    [(-1, 2), (-1, 255), (-2, 0x30), (-5, 0x01), (0, 0x0B), (1, 0x40), (6, ord("#"))],
    ids=["bit-2", "bit-255", "bit-tag", "stem", "reports-tag", "length", "id-byte"],
)
def test_every_record_is_checked_not_just_the_first(record: int, offset: int, value: int) -> None:
    """One changed byte in a later record: the layout, value or id check must see it."""
    data = bytearray(encoded(uniform_batch(40, id_length=10)))
    size = len(data) // 40
    data[record * size + offset % size] = value
    fast = decode_vectorized(bytes(data), MAX)
    if fast is not None:  # a stem byte can make another valid shape: read it as protobuf does
        assert summary(fast) == summary(decode_exact(bytes(data), MAX))
        assert len(fast.groups) == 2
    else:
        assert offset != -5


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
    long_length = b"\x0a\x99\x00" + one.SerializeToString()  # the frame's length, overlong
    token = encoded([one]) + b"\x12\x03tok"  # an enrollment token
    for data in (reordered, unknown, bool_two, reordered + reordered, long_length, token):
        assert decode_vectorized(data, MAX) is None
    for data in (reordered, unknown, bool_two, long_length):
        batch = decode_batch(data, MAX)
        assert batch.encode(np.arange(1)) == frame(one.SerializeToString(deterministic=True))
    assert decode_batch(token, MAX).enrollment_token == "tok"


def test_size_limits() -> None:
    with pytest.raises(InvalidArgument, match="a batch needs at least one report"):
        decode_batch(b"", MAX)
    for data in (encoded(uniform_batch(11)), encoded(mixed_batch(11))):
        with pytest.raises(ResourceExhausted, match="batch of 11 exceeds the limit of 10"):
            decode_batch(data, 10)
    with pytest.raises(InvalidArgument, match="not a valid SubmitReportsRequest"):
        decode_batch(b"\x0a\x05abc", MAX)


def test_identical_repeats_are_dropped_and_conflicts_named() -> None:
    batch = decode_batch(encoded([report("a", True), report("b", False), report("a", True)]), MAX)
    assert (batch.size, list(batch.report_ids), list(batch.positions)) == (3, [b"a", b"b"], [0, 1])
    with pytest.raises(InvalidArgument, match=r"reports\[2\].report_id: 'a' repeats reports\[0\]"):
        decode_batch(encoded([report("a", True), report("b", False), report("a", False)]), MAX)


def test_ids_with_equal_word_sums_are_not_taken_for_repeats() -> None:
    """Ids whose 8-byte words are permuted sum alike: they are compared in full."""
    first, second = "aaaaaaaabbbbbbbb", "bbbbbbbbaaaaaaaa"
    batch = decode_vectorized(encoded([report(first, True), report(second, False)]), MAX)
    assert batch is not None
    assert list(batch.report_ids) == [first.encode(), second.encode()]


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
        exact: object = summary(decode_exact(data, MAX))
    except InvalidArgument as error:
        exact = error.message
    fast = decode_vectorized(data, MAX)
    if fast is not None:
        assert summary(fast) == exact
    elif len({r for r, _, _, _ in rows}) == len(rows):
        pytest.fail("a valid canonical batch without repeats missed the fast path")


values = {
    "bit": st.booleans(),
    "option": st.integers(0, 2**32 - 1),
    "bits": st.binary(max_size=20),
    "hashed": st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                        st.integers(0, 2**32 - 1)),
    "number": st.floats(allow_nan=True, allow_infinity=True),
    "encoded": st.binary(max_size=20),
}  # fmt: skip


@st.composite
def mixed_reports(draw: st.DrawFn) -> list[pb.Report]:
    count = draw(st.integers(1, 25))
    out = []
    for _ in range(count):
        kind = draw(st.sampled_from(KINDS))
        question = draw(st.sampled_from(["q", "r", "long-question-id"]))
        survey = draw(st.sampled_from(["s1", "s2"]))
        out.append(valued(draw(ids), kind, draw(values[kind]), question, survey))
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_reports())
def test_fast_path_agrees_with_exact_path_on_mixed_batches(reports: list[pb.Report]) -> None:
    data = encoded(reports)
    fast = decode_vectorized(data, MAX)
    try:
        exact: object = summary(decode_exact(data, MAX))
    except InvalidArgument as error:
        assert fast is None
        exact = error.message
    if fast is not None:
        assert summary(fast) == exact
    elif len({r.report_id for r in reports}) == len(reports):
        pytest.fail("a valid canonical batch without repeats missed the fast path")


def _mutate(data: st.DataObject, records: np.ndarray, count: int) -> bytes:
    size = records.shape[1]
    for _ in range(data.draw(st.integers(1, 3))):
        column = data.draw(st.integers(0, size - 1))
        value = data.draw(st.integers(0, 255))
        if data.draw(st.booleans()):
            records[:, column] = value
        else:
            records[data.draw(st.integers(0, count - 1)), column] = value
    return records.tobytes()


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_fast_path_never_accepts_what_the_exact_path_reads_differently(data: st.DataObject) -> None:
    """Mutate byte columns of a uniform batch (all records alike, or one record)."""
    count = 4
    records = np.frombuffer(encoded(uniform_batch(count, 8, seed=7)), np.uint8).reshape(count, -1)
    mutated = _mutate(data, records.copy(), count)
    fast = decode_vectorized(mutated, MAX)
    if fast is not None:
        assert summary(fast) == summary(decode_exact(mutated, MAX))


@settings(max_examples=500, deadline=None)
@given(st.data(), st.sampled_from(["option", "hashed", "number", "bits"]))
def test_mutated_batches_of_other_kinds_are_read_as_protobuf_reads_them(
    data: st.DataObject, kind: str
) -> None:
    """The same for each kind of value; a mutation may also split frames unevenly."""
    value = {"option": 200, "hashed": (5, 6, 7), "number": 0.5, "bits": b"\x01\x02"}[kind]
    reports = [valued(f"id{i:05d}", kind, value) for i in range(4)]
    records = np.frombuffer(encoded(reports), np.uint8).reshape(4, -1)
    mutated = _mutate(data, records.copy(), 4)
    fast = decode_vectorized(mutated, MAX)
    if fast is not None:
        assert summary(fast) == summary(decode_exact(mutated, MAX))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_mixed_batches_are_read_as_protobuf_reads_them(data: st.DataObject) -> None:
    """Single-byte changes anywhere in a mixed batch (frames of several sizes)."""
    raw = bytearray(encoded(mixed_batch(12, seed=data.draw(st.integers(0, 50)))))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    mutated = bytes(raw)
    fast = decode_vectorized(mutated, MAX)
    if fast is not None:
        assert summary(fast) == summary(decode_exact(mutated, MAX))


def test_a_number_keeps_its_exact_bits() -> None:
    """A NaN with a payload reaches the tally as sent (the check refuses it there)."""
    odd_nan = struct.unpack("<d", bytes.fromhex("010000000000f87f"))[0]
    batch = decode_vectorized(encoded([valued("a", "number", odd_nan)]), MAX)
    assert batch is not None
    assert batch.groups[0].values.tobytes() == bytes.fromhex("010000000000f87f")


def reference_starts(data: bytes) -> list[int] | None:
    """The frames' starts as a protobuf parser finds them, one frame after the other."""
    starts, pos = [], 0
    while pos < len(data):
        if data[pos] != 0x0A:
            return None
        length, shift, at = 0, 0, pos + 1
        while at < len(data) and data[at] >= 0x80 and shift < 28:
            length |= (data[at] & 0x7F) << shift
            shift, at = shift + 7, at + 1
        if at >= len(data):
            return None
        length |= data[at] << shift
        starts.append(pos)
        pos = at + 1 + length
    return starts if pos == len(data) else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_reports(), st.data())
def test_frames_are_found_where_protobuf_finds_them(
    reports: list[pb.Report], data: st.DataObject
) -> None:
    """Without a loop over the frames, even with 0x0A bytes inside them, or long frames."""
    raw = bytearray(encoded(reports))
    starts = _frame_starts(np.frombuffer(bytes(raw), np.uint8), MAX)
    assert starts is not None
    assert starts.tolist() == reference_starts(bytes(raw))
    if data.draw(st.booleans()):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.sampled_from([0x0A, 0x80, 1]))
    found = _frame_starts(np.frombuffer(bytes(raw), np.uint8), MAX)
    if found is not None:
        assert found.tolist() == reference_starts(bytes(raw))


def test_frames_with_inner_tags_and_two_byte_lengths() -> None:
    inner = struct.unpack("<d", b"\x0a\x00\x0a\x01\x0a\x02\x0a\x03")[0]  # 0x0A, then 0x0A
    reports = [valued(f"r{i}", "number", inner) for i in range(5)]
    reports += [report("x" * 128, True), valued("s" * 100, "bits", b"\x0a" * 30, "u")]
    data = encoded(reports)
    starts = _frame_starts(np.frombuffer(data, np.uint8), MAX)
    assert starts is not None
    assert starts.tolist() == reference_starts(data)
    fast = decode_vectorized(data, MAX)
    assert fast is not None
    assert summary(fast) == summary(decode_exact(data, MAX))
