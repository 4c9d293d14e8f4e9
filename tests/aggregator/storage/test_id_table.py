"""The compiled id table: exact answers whatever the fingerprints, growth, and undo."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.storage import _growth
from deniable.aggregator.storage._id_table import IdTable
from deniable.aggregator.storage._ids import ReportIds, UniformPayloads, fingerprints, kernels

ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


def matrix(ids: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(ids), dtype=np.uint8).reshape(len(ids), -1)


def claim(table: IdTable, ids: list[bytes], refs: list[int], fps: list[int] | None = None):  # type: ignore[no-untyped-def]
    m = matrix(ids)
    prints = fingerprints(m) if fps is None else np.array(fps, dtype=np.uint64)
    found = table.claim(m, prints, np.array(refs, dtype=np.int64)).tolist()
    assert_occupancy(table)
    return found


def rng_ids(seed: int, count: int, length: int) -> list[bytes]:
    """Distinct random ids of ``length`` characters from ``ALPHABET`` (fewer than ``count``)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(np.frombuffer(ALPHABET, np.uint8), (count, length))
    return list(dict.fromkeys(bytes(row) for row in rows))


def home(table: IdTable, slot: int) -> int:
    """A fingerprint whose home is ``slot`` of the table (its top bits)."""
    bits = (2 * table.capacity).bit_length() - 1
    return (slot << (64 - bits)) | 1


def assert_occupancy(table: IdTable) -> None:
    """The table holds exactly one slot per id: no stale slot eats into the load bound."""
    assert np.count_nonzero(table._table) == table.used


def test_new_ids_are_entered_and_known_ids_give_their_reference() -> None:
    table = IdTable(3)
    assert claim(table, [b"abc", b"def"], [10, 11]) == [-1, -1]
    assert claim(table, [b"def", b"ghi", b"abc"], [20, 21, 22]) == [11, -1, 10]
    assert table.used == 3


def test_equal_fingerprints_never_make_different_ids_equal() -> None:
    """Every id gets the same fingerprint: the table must still compare the bytes."""
    table = IdTable(2)
    ids = [bytes([a, b]) for a in ALPHABET[:20] for b in ALPHABET[:20]]
    same = [12345 | 1] * len(ids)
    assert claim(table, ids, list(range(len(ids))), same) == [-1] * len(ids)
    assert claim(table, ids[::-1], [0] * len(ids), same) == list(range(len(ids)))[::-1]
    assert claim(table, [b"zz"], [999], same[:1]) == [-1]


def test_the_table_grows_far_past_its_first_size() -> None:
    table = IdTable(8)
    rng = np.random.default_rng(5)
    ids = [bytes(row) for row in rng.choice(np.frombuffer(ALPHABET, np.uint8), (20_000, 8))]
    ids = list(dict.fromkeys(ids))  # distinct
    half = len(ids) // 2
    assert claim(table, ids[:half], list(range(half))) == [-1] * half
    assert claim(table, ids, list(range(len(ids)))) == list(range(half)) + [-1] * (len(ids) - half)
    assert table.used == len(ids)


def test_truncate_forgets_the_latest_ids_only() -> None:
    table = IdTable(1)
    claim(table, [b"a", b"b"], [1, 2])
    claim(table, [b"c"], [3])
    table.truncate(2)
    assert claim(table, [b"c", b"a"], [4, 5]) == [-1, 1]
    with pytest.raises(ValueError, match="cannot truncate 3 ids to 4"):
        table.truncate(4)


def test_truncate_keeps_every_earlier_id_reachable_in_a_wrapped_cluster() -> None:
    """Undo inside a probe run that wraps from the table's last slot to its first.

    Every id's home slot is one of the table's last three, so their run wraps to slot 0;
    undoing any number of the latest ids must leave every earlier one reachable.
    """
    table = IdTable(2)
    last = 2 * table.capacity - 1  # the table's last slot: every home below is near the end
    ids = [bytes([65 + i, 66]) for i in range(12)]
    fps = [home(table, last - (i % 3)) for i in range(12)]
    refs = list(range(12))
    for i in range(12):  # one claim per id, so that undo marks exist between them
        assert claim(table, ids[i : i + 1], refs[i : i + 1], fps[i : i + 1]) == [-1]
    for keep in (11, 7, 3, 0):
        table.truncate(keep)
        again = claim(table, ids, [100 + r for r in refs], fps)
        assert again == refs[:keep] + [-1] * (12 - keep)
        table.truncate(12)  # the re-entered ids are the latest: undo them again...
        table.truncate(keep)  # ...and every id after the first `keep`


def test_background_growth_gives_the_same_answers_and_capacity() -> None:
    """Doubled arrays prepared in a thread lose no id.

    Above ``background_from`` the next arrays are prepared in the background: ids entered
    before, during and after the preparation are all found, with their references.
    """
    table = IdTable(6, background_from=512)
    rng = np.random.default_rng(11)
    ids = [bytes(row) for row in rng.choice(np.frombuffer(ALPHABET, np.uint8), (6000, 6))]
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), 97):
        chunk = ids[start : start + 97]
        assert claim(table, chunk, list(range(start, start + len(chunk)))) == [-1] * len(chunk)
    table.settle()
    assert table.used == len(ids) <= table.capacity < 4 * len(ids)
    assert claim(table, ids[::-1], [0] * len(ids)) == list(range(len(ids)))[::-1]


class CountingKernels:
    """The compiled kernels, counting the background copies (``regrow``)."""

    def __init__(self, fail: bool = False) -> None:
        self.kernels, self.regrows, self.fail = kernels(), 0, fail

    def regrow(self, *args: object) -> None:
        self.regrows += 1
        if self.fail:
            raise MemoryError("no room for the doubled table")
        self.kernels.regrow(*args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.kernels, name)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingKernels:
    counter = CountingKernels()
    monkeypatch.setattr(_growth, "kernels", lambda: counter)
    return counter


@pytest.mark.parametrize("undo_to", [300, 350])
def test_undo_of_caught_up_ids_keeps_the_preparation(
    counting: CountingKernels, undo_to: int
) -> None:
    """Undoing ids entered into the doubled table after its copy takes them out of it.

    A refused batch (an id reused with other content) is undone on every call a client
    cares to make: that must not throw away the preparation and copy the table again.
    """
    table = IdTable(4, background_from=512)
    ids = [bytes(row) for row in rng_ids(3, 3000, 4)]
    claim(table, ids[:200], list(range(200)))
    claim(table, ids[200:300], list(range(200, 300)))  # over half of 512: preparation starts
    table.settle()
    claim(table, ids[300:400], list(range(300, 400)))  # ...and these are entered into it
    preparation = table._growth
    table.truncate(undo_to)  # ids[undo_to:400] are forgotten; others take their rows
    kept = ids[:undo_to] + ids[1000:1100]
    claim(table, ids[1000:1100], list(range(undo_to, undo_to + 100)))
    assert table._growth is preparation is not None
    assert preparation._table is not None
    assert np.count_nonzero(preparation._table) == undo_to + 100
    assert counting.regrows == 1
    # 500 more ids need the doubled capacity (1024): the preparation is switched to.
    kept += ids[1100:1600]
    assert claim(table, ids[1100:1600], list(range(undo_to + 100, len(kept)))) == [-1] * 500
    assert table.capacity == 1024
    assert table._table is preparation._table
    assert claim(table, kept, [-9] * len(kept)) == list(range(len(kept)))
    forgotten = ids[undo_to:400]
    assert claim(table, forgotten, [-9] * len(forgotten)) == [-1] * len(forgotten)


def test_undo_below_a_background_copy_discards_it(counting: CountingKernels) -> None:
    """Undoing ids that a background preparation copied makes the preparation stale.

    Adopting it anyway would bring the forgotten ids' slots back into the table.
    """
    table = IdTable(4, background_from=512)
    ids = [bytes(row) for row in rng_ids(3, 3000, 4)]
    claim(table, ids[:200], list(range(200)))
    claim(table, ids[200:300], list(range(200, 300)))  # the copy starts with 300 ids
    table.settle()
    table.truncate(200)
    assert table._growth is None
    assert claim(table, ids[400:900], list(range(400, 900))) == [-1] * 500
    assert table.capacity == 1024
    assert claim(table, ids[200:300], [7] * 100) == [-1] * 100
    expected = list(range(200)) + list(range(400, 900)) + [7] * 100
    found = claim(table, ids[:200] + ids[400:900] + ids[200:300], [-9] * 800)
    assert found == expected


def test_a_failed_preparation_leaves_growth_to_the_claims(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """If the thread cannot build the doubled table (no memory), the claims grow it."""
    monkeypatch.setattr(_growth, "kernels", lambda: CountingKernels(fail=True))
    table = IdTable(4, background_from=512)
    ids = [bytes(row) for row in rng_ids(5, 3000, 4)]
    for start in range(0, 1500, 100):
        chunk = ids[start : start + 100]
        assert claim(table, chunk, list(range(start, start + len(chunk)))) == [-1] * len(chunk)
    assert table.capacity == 2048
    assert "preparing a larger id table failed" in caplog.text
    assert claim(table, ids[:1500], [-9] * 1500) == list(range(1500))


def test_undo_below_a_slot_order_copy_rebuilds_in_row_order() -> None:
    """Undo below the rows a background copy entered in slot order, after the switch.

    Removing the latest rows only restores the table if they were entered after every
    other row; the background copy enters rows in slot order, so undoing some of them (a
    failed commit just as the table grew) must rebuild the table instead. Here a run
    wraps from the last slot to the first: the copy meets the latest id (old slot 1)
    before an earlier one (old slot 1023), which then has to pass it in the new table.
    """
    table = IdTable(2, background_from=512)
    ids = [
        bytes(pair)
        for pair in np.frombuffer(ALPHABET, np.uint8)[np.indices((40, 40)).reshape(2, -1).T]
    ]
    fps = [home(table, 300 + i) for i in range(253)]  # fillers in the middle of the table
    fps += [home(table, 1023), home(table, 0) | 2, home(table, 1023) | 4]  # rows 253-255
    fps += [home(table, 300 + i) | 8 for i in range(300)]  # rows 256-555: more fillers
    claim(table, ids[:256], list(range(256)), fps[:256])  # half full: the copy starts
    table.settle()
    claim(table, ids[256:556], list(range(256, 556)), fps[256:556])
    assert table.capacity == 1024  # switched to the copy
    table.truncate(255)  # undo row 255 (and later ones), which the copy entered early
    assert claim(table, ids[253:256], [-1] * 3, fps[253:256]) == [253, 254, -1]
    table.truncate(255)
    assert claim(table, ids[:255], [-1] * 255, fps[:255]) == list(range(255))


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"an \(m, 2\) matrix"):
        claim(IdTable(2), [b"abc"], [1])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.binary(min_size=1, max_size=3), max_size=400), st.booleans()),
        max_size=8,
    ),
    st.sampled_from([0, 1, 2, 3]),
)
def test_the_table_agrees_with_a_dict(batches: list[tuple[list[bytes], bool]], bits: int) -> None:
    """Batches of ids, some undone again, against a dict of first references.

    Ids are padded to one length. In some runs fingerprints keep only ``bits`` bits
    (besides the low 1), so that probe runs are long and ids are told apart by bytes.
    """
    table, seen, ref = IdTable(3, background_from=512), dict[bytes, int](), 0

    def prints(ids: list[bytes]) -> list[int]:
        full = fingerprints(matrix(ids))
        kept = full & np.uint64((1 << bits) - 1) | np.uint64(1) if bits else full
        return [int(f) for f in kept]

    for batch, undo in batches:
        ids = list(dict.fromkeys(i.ljust(3, b"_") for i in batch))
        if not ids:
            continue
        refs = list(range(ref, ref + len(ids)))
        ref += len(ids)
        expected = [seen.get(i, -1) for i in ids]
        mark = table.used
        assert claim(table, ids, refs, prints(ids)) == expected
        if undo:
            table.truncate(mark)
            assert_occupancy(table)
        else:
            for i, r in zip(ids, refs, strict=True):
                seen.setdefault(i, r)
    table.settle()
    everything = list(seen)
    if everything:
        found = claim(table, everything, [-7] * len(everything), prints(everything))
        assert found == list(seen.values())


def test_report_ids_group_by_length_and_index_like_a_list() -> None:
    ids = [b"abc", b"de", b"fgh", b"i", b"jk"]
    grouped = ReportIds.of(ids)
    assert list(grouped) == ids
    assert grouped[-1] == b"jk"
    assert grouped[1:3] == [b"de", b"fgh"]
    assert [g.rows.tolist() for g in grouped.groups] == [[3], [1, 4], [0, 2]]
    uniform = ReportIds.uniform(matrix([b"abc", b"fgh"]))
    assert uniform.groups[0].fingerprints.tolist() == grouped.groups[2].fingerprints.tolist()
    with pytest.raises(IndexError, match="report row 5 out of range for 5"):
        grouped[5]


def test_uniform_payloads_are_the_stem_and_the_bit() -> None:
    payloads = UniformPayloads(b"stem", np.array([1, 0, 1], dtype=np.uint8))
    assert list(payloads) == [b"stem\x01", b"stem\x00", b"stem\x01"]
    assert payloads[0:2] == [b"stem\x01", b"stem\x00"]
