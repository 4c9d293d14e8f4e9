"""Multiple-choice perturbation: the hash family, exact uniform draws, GRR/OUE/OLH samplers."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from deniable.shared import RandomizedResponse
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    OlhReport,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    mechanism_of,
)
from deniable.shared.mechanisms._oue_wire import decode_oue_bits, encode_oue_bits
from deniable.shared.mechanisms._universal_hash import (
    HASH_PRIME,
    hash_unchecked,
    universal_hash,
    universal_hash_reference,
)
from deniable.shared.questions import CATEGORICAL
from deniable.shared.sampling._uniform import MAX_ROUNDS, candidates, uniform_below
from tests.shared._sources import ScriptedSource

P_FLOOR = 1e-6  # statistical tests fail only below this p-value (one false alarm in a million runs)
P = HASH_PRIME


def constant_urandom(monkeypatch: pytest.MonkeyPatch, byte: int) -> list[int]:
    """Make the OS source return ``byte`` repeatedly; returns the list of request sizes."""
    calls: list[int] = []

    def fake(size: int) -> bytes:
        calls.append(size)
        return bytes([byte]) * size

    monkeypatch.setattr(os, "urandom", fake)
    return calls


def chi_square_p(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


# --- the hash family ----------------------------------------------------------------------


def test_vectorized_hash_equals_python_integer_arithmetic() -> None:
    rng = np.random.default_rng(61)
    edges = np.array([0, 1, 2, (1 << 32) - 1, 1 << 32, (1 << 60), P - 2, P - 1], dtype=np.uint64)
    values = np.array([0, 1, 2, 1023, 1024, (1 << 16) - 1], dtype=np.uint64)
    a_edge, b_edge, v_edge = (x.ravel() for x in np.meshgrid(edges, edges, values))
    a = np.concatenate([a_edge, rng.integers(0, P, 20_000, dtype=np.uint64)])
    b = np.concatenate([b_edge, rng.integers(0, P, 20_000, dtype=np.uint64)])
    v = np.concatenate([v_edge, rng.integers(0, 1 << 16, 20_000, dtype=np.uint64)])
    for g in (2, 3, 4, 7, 1000, (1 << 32) - 1):
        fast = universal_hash(a, b, v, g)
        triples = zip(a.tolist(), b.tolist(), v.tolist(), strict=True)
        assert fast.tolist() == [universal_hash_reference(x, y, z, g) for x, y, z in triples]
    # The value before the final "mod g" is fully reduced mod P (g = 2^62 > P is a no-op).
    unreduced = hash_unchecked(a, b, v, 1 << 62)
    triples = zip(a.tolist(), b.tolist(), v.tolist(), strict=True)
    assert unreduced.tolist() == [(x * z + y) % P for x, y, z in triples]
    assert universal_hash_reference(P - 1, P - 1, 1023, 7) == ((P - 1) * 1024) % P % 7


def test_hash_broadcasts_and_accepts_signed_integers() -> None:
    a = np.array([[5], [P - 1]], dtype=np.int64)
    out = universal_hash(a, 7, np.arange(4), 5)
    assert out.shape == (2, 4)
    assert out.dtype == np.uint64
    assert out[0].tolist() == [(5 * v + 7) % P % 5 for v in range(4)]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (([P], [0], [0], 4), ValueError, rf"a must be in \[0, {P}\), got {P} at index \(0,\)"),
        (([0], [-1], [0], 4), ValueError, r"b must be in \[0, \d+\), got -1 at index \(0,\)"),
        (([0], [0], [0, 65536], 4), ValueError, r"value must be in \[0, 65536\), got 65536"),
        (([0], [0], [0.5], 4), TypeError, r"value must be integers, got dtype float64"),
        (([0], [0], [0], 1), ValueError, r"g must be between 2 and 4294967295, got 1"),
        (([0], [0], [0], True), TypeError, r"g must be an integer, got True"),
    ],
)
def test_hash_rejects_out_of_range_inputs(
    args: tuple[object, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        universal_hash(*args)  # type: ignore[arg-type]


def test_hashes_of_two_options_are_independent_and_uniform() -> None:
    # (H(x), H(v)) for x ≠ v is uniform on [g]² up to 1/P: chi-square over g² cells.
    g, n = 5, 250_000
    reports = OptimizedLocalHashing(k=10, g=g, alpha=0.5).perturb_many(
        np.zeros(n, dtype=np.int64), rng=np.random.default_rng(11)
    )
    hx = universal_hash(reports.a, reports.b, 3, g).astype(np.int64)
    hv = universal_hash(reports.a, reports.b, 7, g).astype(np.int64)
    cells = np.bincount(hx * g + hv, minlength=g * g)
    assert chi_square_p(cells, np.ones(g * g)) > P_FLOOR


# --- exact uniform integers ------------------------------------------------------------------


def test_uniform_below_is_exact_over_all_byte_values() -> None:
    # bound 10 uses 4 low bits of a byte: of the 256 bytes, exactly 16 map to each of 0..9
    # and 96 are rejected. A draw reads R = candidates(10) = 46 bytes and takes the first
    # accepted one; here the first candidate runs over every byte value and the second is
    # always accepted.
    count = candidates(10)
    assert count == 46  # (6/16)^46 <= 2^-64 < (6/16)^45
    second = [i % 10 for i in range(256)]
    rows = [bytes([first, second[first], *[0] * (count - 2)]) for first in range(256)]
    source = ScriptedSource([b"".join(rows)])
    out = uniform_below(10, 256, source)
    accepted = np.arange(256) % 16 < 10
    assert out[accepted].tolist() == (np.arange(256) % 16)[accepted].tolist()
    assert np.bincount(out[accepted].astype(np.int64)).tolist() == [16] * 10
    assert out[~accepted].tolist() == np.array(second)[~accepted].tolist()
    assert source.requests == [256 * count]


def test_uniform_below_redraws_only_when_every_candidate_is_rejected() -> None:
    count = candidates(10)
    source = ScriptedSource([b"\x0f" * count, bytes([12, 7, *[0] * (count - 2)])])
    assert uniform_below(10, 1, source).tolist() == [7]
    assert source.requests == [count, count]


@pytest.mark.parametrize(
    ("bound", "width"), [(2, 1), (256, 1), (257, 2), (1 << 32, 4), (P, 8), (1 << 64, 8)]
)
def test_uniform_below_reads_the_smallest_word(bound: int, width: int) -> None:
    count = candidates(bound)
    assert count == (64 if bound == 257 else 2 if bound == P else 1)
    source = ScriptedSource([bytes(3 * width * count)])
    assert uniform_below(bound, 3, source).tolist() == [0, 0, 0]
    assert source.requests == [3 * width * count]


def test_uniform_below_top_values_and_broken_sources() -> None:
    top = ScriptedSource([b"\xff" * 8])
    assert uniform_below(1 << 64, 1, top).tolist() == [(1 << 64) - 1]
    assert uniform_below(P + 1, 1, ScriptedSource([b"\xff" * 8])).tolist() == [P]
    # 2^61 − 1 = P itself is rejected every time from an all-0xFF source.
    with pytest.raises(RuntimeError, match=f"for {MAX_ROUNDS} rounds in a row"):
        uniform_below(P, 4, lambda size: b"\xff" * size)
    assert uniform_below(1, 5, ScriptedSource([])).tolist() == [0] * 5  # no randomness
    with pytest.raises(ValueError, match="bound must be between 1 and 2"):
        uniform_below(0, 1, os.urandom)


# --- samplers: exactness with controlled bytes -------------------------------------------


def test_grr_follows_the_os_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    truth = np.array([0, 3, 1, 2])
    calls = constant_urandom(monkeypatch, 0x00)
    grr = GeneralizedRandomizedResponse(k=4, alpha=0.5)
    assert grr.perturb_many(truth).tolist() == truth.tolist()  # U = 0 < α: keep
    assert calls == [4, 4]  # the keep bytes, and the replacements, drawn and not used
    calls = constant_urandom(monkeypatch, 0xFF)
    # U >= α: replace; the uniform draw reads the low 2 bits of 0xFF, i.e. option 3.
    assert grr.perturb_many(truth).tolist() == [3, 3, 3, 3]
    assert calls == [4, 4]
    with pytest.raises(RuntimeError, match="not producing uniform random bytes"):
        GeneralizedRandomizedResponse(k=5, alpha=0.5).perturb(0)  # 7 >= 5, every time


def test_oue_and_olh_follow_the_os_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    constant_urandom(monkeypatch, 0x00)
    assert OptimizedUnaryEncoding(k=5, q=0.25).perturb_many([1, 4]).all()
    assert OptimizedLocalHashing(k=9, g=4, alpha=0.5).perturb(8) == OlhReport(0, 0, 0)
    constant_urandom(monkeypatch, 0xFF)
    assert not OptimizedUnaryEncoding(k=5, q=0.25).perturb_many([1, 4]).any()
    with pytest.raises(RuntimeError):  # a = 2^61 − 1 = P is always rejected
        OptimizedLocalHashing(k=9, g=4, alpha=0.5).perturb(8)


def test_seeded_generator_is_used_only_when_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_urandom(size: int) -> bytes:
        raise AssertionError("a seeded run must not read the OS source")

    monkeypatch.setattr(os, "urandom", no_urandom)
    truth = np.arange(1000) % 7
    for mechanism in (
        GeneralizedRandomizedResponse(7, 0.3),
        OptimizedUnaryEncoding(7, 0.3),
        OptimizedLocalHashing(7, 3, 0.3),
    ):
        first = mechanism.perturb_many(truth, rng=np.random.default_rng(5))
        again = mechanism.perturb_many(truth, rng=np.random.default_rng(5))
        assert np.array_equal(np.asarray(first), np.asarray(again))
        with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
            mechanism.perturb_many(truth, rng=5)  # type: ignore[arg-type]


# --- samplers: output distributions --------------------------------------------------------


@pytest.mark.parametrize("source", ["os", "seeded"])
@pytest.mark.parametrize(("k", "alpha"), [(2, 0.5), (6, 0.3), (37, 0.9)])
def test_grr_output_distribution_is_p_star_and_q_star(source: str, k: int, alpha: float) -> None:
    n, truth = 300_000, 1
    grr = GeneralizedRandomizedResponse(k, alpha)
    rng = np.random.default_rng(20261122) if source == "seeded" else None
    counts = np.bincount(grr.perturb_many(np.full(n, truth), rng=rng), minlength=k)
    expected = np.full(k, grr.q_star)
    expected[truth] = grr.p_star
    assert chi_square_p(counts, expected) > P_FLOOR
    assert stats.binomtest(int(counts[truth]), n, grr.p_star).pvalue > P_FLOOR


def test_grr_with_two_options_reports_like_yes_no_randomized_response() -> None:
    grr, rr = GeneralizedRandomizedResponse(2, 0.3), RandomizedResponse(0.3)
    assert grr.p_star == rr.p_truth
    kept = int(np.count_nonzero(grr.perturb_many(np.ones(200_000, dtype=np.int64)) == 1))
    assert stats.binomtest(kept, 200_000, rr.p_truth).pvalue > P_FLOOR


@pytest.mark.parametrize("q", [0.25, OptimizedUnaryEncoding.from_epsilon(6, 1.0).q])
def test_oue_bits_are_half_for_the_truth_and_q_elsewhere_and_independent(q: float) -> None:
    n, k = 200_000, 6
    truth = np.arange(n) % k
    bits = OptimizedUnaryEncoding(k, q).perturb_many(truth, rng=np.random.default_rng(3))
    assert bits.shape == (n, k)
    own = bits[np.arange(n), truth]
    assert stats.binomtest(int(own.sum()), n, 0.5).pvalue > P_FLOOR
    others = bits.sum() - own.sum()
    assert stats.binomtest(int(others), n * (k - 1), q).pvalue > P_FLOOR
    # Two other bits of the same report are independent (Fisher's exact test on 2x2).
    rows = truth == 0
    table = np.bincount(bits[rows, 1] * 2 + bits[rows, 2], minlength=4).reshape(2, 2)
    assert stats.fisher_exact(table).pvalue > P_FLOOR


@pytest.mark.parametrize(("g", "alpha"), [(2, 0.2), (4, 0.5), (1000, 0.9)])
def test_olh_keeps_the_hash_with_p_star_and_supports_others_with_one_over_g(
    g: int, alpha: float
) -> None:
    n, k = 200_000, 50
    olh = OptimizedLocalHashing(k, g, alpha)
    truth = np.arange(n) % k
    a, b, y = olh.perturb_many(truth, rng=np.random.default_rng(17))
    assert a.dtype == b.dtype == np.uint64
    assert int(a.max()) < P
    assert int(b.max()) < P
    assert 0 <= int(y.min()) <= int(y.max()) < g
    kept = universal_hash(a, b, truth, g) == y.astype(np.uint64)
    assert stats.binomtest(int(kept.sum()), n, olh.p_star).pvalue > P_FLOOR
    other = universal_hash(a, b, (truth + 1) % k, g) == y.astype(np.uint64)
    assert stats.binomtest(int(other.sum()), n, olh.q_star).pvalue > P_FLOOR
    # The hash seeds are uniform: their top 3 bits fall in 8 equal cells (61-bit words).
    assert chi_square_p(np.bincount((a >> np.uint64(58)).astype(np.int64)), np.ones(8)) > P_FLOOR


# --- shapes, types and validation ---------------------------------------------------------


def test_shapes_and_scalar_reports() -> None:
    grr = GeneralizedRandomizedResponse(4, 0.5)
    assert grr.perturb_many(np.zeros((3, 2), dtype=np.uint8)).shape == (3, 2)
    assert grr.perturb_many([]).shape == (0,)
    assert isinstance(grr.perturb(np.int16(3)), int)
    oue = OptimizedUnaryEncoding(4, 0.25)
    assert oue.perturb_many(np.zeros((3, 2), dtype=np.int64)).shape == (3, 2, 4)
    assert oue.perturb(0).shape == (4,)
    olh = OptimizedLocalHashing(4, 3, 0.5)
    many = olh.perturb_many(np.zeros((3, 2), dtype=np.int64))
    assert many.a.shape == many.b.shape == many.y.shape == (3, 2)
    one = olh.perturb(3)
    assert all(isinstance(x, int) for x in one)
    assert universal_hash(one.a, one.b, 3, 3).item() == one.y or olh.alpha < 1


OPTION_RANGE = r"must be option numbers in \[0, 4\), got"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda m: m.perturb_many([0, 4]), ValueError, rf"values {OPTION_RANGE} 4 at index \(1,\)"),
        (lambda m: m.perturb_many([[0], [-1]]), ValueError, r"got -1 at index \(1, 0\)"),
        (lambda m: m.perturb_many([0.0]), TypeError, r"\(integers\), got dtype float64"),
        (lambda m: m.perturb_many([True]), TypeError, r"got dtype bool"),
        (lambda m: m.perturb(4), ValueError, rf"value {OPTION_RANGE} 4$"),
        (lambda m: m.perturb([1, 2]), ValueError, r"value must be a single option, got shape"),
        (lambda m: m.perturb("a"), TypeError, r"got dtype <U1"),
    ],
)
@pytest.mark.parametrize(
    "mechanism",
    [
        GeneralizedRandomizedResponse(4, 0.5),
        OptimizedUnaryEncoding(4, 0.25),
        OptimizedLocalHashing(4, 3, 0.5),
    ],
)
def test_invalid_answers_are_rejected_naming_the_value(
    mechanism: object, call: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call(mechanism)  # type: ignore[operator]


def test_the_wire_form_keeps_parameters_and_epsilon() -> None:
    for spec in (
        GeneralizedRandomizedResponse.from_epsilon(9, 1.0),
        OptimizedUnaryEncoding(9, 0.3),
        OptimizedLocalHashing.from_epsilon(90, 2.0),
    ):
        question = CATEGORICAL.question_for(spec)
        assert question.mechanism.WhichOneof("kind") == spec.name
        mechanism = mechanism_of(question)
        assert type(mechanism) is type(spec)
        assert mechanism == spec
        assert (mechanism.describe(), mechanism.epsilon) == (spec.describe(), spec.epsilon)
    question = CATEGORICAL.question_for(GeneralizedRandomizedResponse(4, 0.5))
    question.mechanism.CopyFrom(RandomizedResponse(0.5).to_message())
    with pytest.raises(ValueError, match="randomized_response does not apply to a categorical"):
        mechanism_of(question)


# --- OUE reports on the wire ----------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 8, 9, 1024])
def test_oue_bits_round_trip_through_bytes(k: int) -> None:
    bits = OptimizedUnaryEncoding(k, 0.3).perturb_many(np.arange(20) % k)
    payloads = [encode_oue_bits(row) for row in bits]
    assert all(len(p) == (k + 7) // 8 for p in payloads)
    assert np.array_equal(decode_oue_bits(payloads, k), bits)
    assert decode_oue_bits([], k).shape == (0, k)


def test_oue_payloads_are_validated() -> None:
    with pytest.raises(ValueError, match=r"OUE report 1 must be 2 bytes for k=9, got 1"):
        decode_oue_bits([b"\x00\x00", b"\x00"], 9)
    with pytest.raises(ValueError, match=r"OUE report 0 has padding bits set beyond k=9"):
        decode_oue_bits([b"\x00\x02"], 9)
    with pytest.raises(ValueError, match=r"OUE report 0 must be 2 bytes for k=9, got str"):
        decode_oue_bits(["ab"], 9)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="bits must be a 1-dimensional boolean array"):
        encode_oue_bits(np.array([1, 0, 1]))


# --- empirical privacy audit -------------------------------------------------------------


@pytest.mark.parametrize(
    "mechanism",
    [
        GeneralizedRandomizedResponse.from_epsilon(6, 1.0),
        OptimizedUnaryEncoding.from_epsilon(6, 1.0),
        OptimizedLocalHashing.from_epsilon(6, 1.0),
    ],
    ids=lambda m: m.name,
)
def test_empirical_privacy_audit_on_neighbouring_inputs(
    mechanism: GeneralizedRandomizedResponse | OptimizedUnaryEncoding | OptimizedLocalHashing,
) -> None:
    # Run inputs 0 and 1 N times each and count the maximal-ratio event S:
    # GRR: report = 0; OUE: bit 0 set and bit 1 clear; OLH: y = H(0) ≠ H(1).
    # One-sided Clopper–Pearson bounds (level 1e-6 each) must not show a ratio above e^ε,
    # and the observed log-ratio must be within 5 standard errors of ε (the bound is tight).
    n = 200_000
    rng = np.random.default_rng(99)
    hits = []
    for x in (0, 1):
        truth = np.full(n, x, dtype=np.int64)
        event: NDArray[np.bool_]
        if isinstance(mechanism, GeneralizedRandomizedResponse):
            event = mechanism.perturb_many(truth, rng=rng) == 0
        elif isinstance(mechanism, OptimizedUnaryEncoding):
            bits = mechanism.perturb_many(truth, rng=rng)
            event = bits[:, 0] & np.logical_not(bits[:, 1])
        else:
            a, b, y = mechanism.perturb_many(truth, rng=rng)
            h0, h1 = universal_hash(a, b, 0, mechanism.g), universal_hash(a, b, 1, mechanism.g)
            event = (y.astype(np.uint64) == h0) & (h0 != h1)
        hits.append(int(event.sum()))
    low = stats.beta.ppf(P_FLOOR, hits[0], n - hits[0] + 1)
    high = stats.beta.ppf(1 - P_FLOOR, hits[1] + 1, n - hits[1])
    assert math.log(low / high) <= mechanism.epsilon
    observed = math.log(hits[0] / hits[1])
    se = math.sqrt((n - hits[0]) / (n * hits[0]) + (n - hits[1]) / (n * hits[1]))
    assert abs(observed - mechanism.epsilon) <= 5 * se
