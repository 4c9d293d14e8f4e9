"""The page's discrete mechanisms against the Python client's, in real Chromium.

Replay: from the same random bytes, the page's report (report id included) and its wire
encoding are the Python client's, and it reads exactly the bytes Python read (it is given
only those). ε: the page computes the Python mechanism's ε to the last bit. Randomness:
WebCrypto is asked for the same byte counts, in the same calls, for every truth and report.
"""

from __future__ import annotations

import math
import os
import random
from typing import Any

from google.protobuf.json_format import MessageToDict

from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    ItemRandomizedResponse,
    Mechanism,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
)
from deniable.shared.questions import BINARY, CATEGORICAL, MULTI_SELECT
from tests.web._discrete import EPSILONS, Case, cases, parameter_cases, python_report

STREAMS = 200
"""Uniformly random byte streams per (question, truth)."""

RUNS = 40
"""More streams per (question, truth) with runs of 0x00 or 0xFF: rejected uniform rounds,
rejected hash draws and Bernoulli ties, which uniform bytes almost never give."""

STREAM_BYTES = 1200

REPLAY = """
const [questions, items] = arguments;
return items.map(([index, truth, hex]) => {
  try {
    return window.deniable.replay(questions[index], truth, hex);
  } catch (error) {
    return {error: String(error)};
  }
});
"""

COUNT_READS = """
const [questions, truths, reports] = arguments;
const original = crypto.getRandomValues;
let calls = [];
crypto.getRandomValues = (array) => {
  calls.push(array.byteLength);
  return original.call(crypto, array);
};
try {
  return questions.map((question, index) => truths[index].map((truth) => {
    const seen = [];
    for (let i = 0; i < reports; i++) {
      calls = [];
      window.deniable.perturbMany(question, [truth]);
      seen.push(calls.join(","));
    }
    return seen;
  }));
} finally {
  crypto.getRandomValues = original;
}
"""

EPSILON_OF = "return arguments[0].map((question) => window.deniable.epsilonOf(question));"


def stream(rng: random.Random, runs: bool) -> bytes:
    """Random bytes; with ``runs``, one to three runs of 0x00 or 0xFF past the report id."""
    data = bytearray(rng.randbytes(STREAM_BYTES))
    for _ in range(rng.randint(1, 3) if runs else 0):
        start, size = rng.randrange(16, 260), rng.randint(1, 200)
        data[start : start + size] = bytes([rng.choice((0x00, 0xFF))]) * size
    return bytes(data[:STREAM_BYTES])


def all_cases() -> list[Case]:
    return [item for epsilon in EPSILONS for item in cases(epsilon)] + parameter_cases()


def test_replayed_bytes_give_the_python_clients_reports(page: Any) -> None:
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    items = all_cases()
    payload: list[tuple[int, str, str]] = []
    expected: list[tuple[dict[str, Any], int, str]] = []
    for index, item in enumerate(items):
        for truth in item.truths:
            for count in range(STREAMS + RUNS):
                data = stream(rng, runs=count >= STREAMS)
                report, used = python_report(item, truth, data)
                payload.append((index, truth, data[:used].hex()))
                expected.append((MessageToDict(report), used, report.SerializeToString().hex()))
    results = page.execute_script(REPLAY, [item.json for item in items], payload)
    assert len(results) == len(expected)
    failures = [
        (items[index].name, truth, result, want)
        for (index, truth, _), result, want in zip(payload, results, expected, strict=True)
        if (result.get("report"), result.get("used"), result.get("wire")) != want
    ]
    assert not failures, (len(failures), failures[:3])
    print(f"\nreplay: {len(results)} reports of {len(items)} questions identical")


def test_every_truth_and_report_reads_the_same_bytes(page: Any) -> None:
    items = all_cases()
    reports = 40
    seen = page.execute_script(
        COUNT_READS, [item.json for item in items], [list(item.truths) for item in items], reports
    )
    rng = random.Random(1)
    for item, by_truth in zip(items, seen, strict=True):
        calls = {sequence for sequences in by_truth for sequence in sequences}
        assert len(calls) == 1, (item.name, calls)
        (sequence,) = calls
        read = sum(int(size) for size in sequence.split(","))
        _, python_read = python_report(item, item.truths[0], stream(rng, runs=False))
        assert read == python_read, (item.name, read, python_read)
        print(f"\n{item.name}: {read} bytes per report, calls {sequence}")


def random_mechanisms(rng: random.Random) -> list[Mechanism]:
    """Mechanisms with random parameters, extreme ones included, and from ε on a grid."""

    def unit() -> float:
        return rng.choice([rng.random(), rng.random() ** 20, 1 - rng.random() ** 20])

    made: list[Mechanism] = []
    for _ in range(60):
        made.append(RandomizedResponse(max(unit(), 5e-324)))
        made.append(GeneralizedRandomizedResponse(rng.randint(2, 1024), max(unit(), 5e-324)))
        made.append(
            OptimizedUnaryEncoding(rng.randint(2, 1024), min(max(unit() / 2, 5e-324), 0.4999))
        )
        g = rng.choice([2, 3, rng.randint(2, 1000), rng.randint(2, 2**32 - 1), 2**32 - 1])
        made.append(OptimizedLocalHashing(rng.randint(2, 1024), g, max(unit(), 5e-324)))
        made.append(
            ItemRandomizedResponse(rng.randint(2, 64), min(max(unit() / 2, 1e-300), 0.4999))
        )
    for epsilon in (0.001, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0):
        made.append(RandomizedResponse.from_epsilon(epsilon))
        made.append(GeneralizedRandomizedResponse.from_epsilon(7, epsilon))
        made.append(OptimizedUnaryEncoding.from_epsilon(300, epsilon))
        made.append(OptimizedLocalHashing.from_epsilon(50, epsilon))
        made.append(ItemRandomizedResponse.from_epsilon(64, epsilon))
    made.append(RandomizedResponse(1 - 2**-53))  # the largest α below 1: ε ≈ 37.4
    return [mechanism for mechanism in made if math.isfinite(mechanism.epsilon)]


def question_json(mechanism: Mechanism) -> dict[str, Any]:
    k = getattr(mechanism, "k", 2)
    if isinstance(mechanism, RandomizedResponse):
        question = BINARY.question_for(mechanism)
    elif isinstance(mechanism, ItemRandomizedResponse):
        question = MULTI_SELECT.question_for(mechanism, [f"item {i}" for i in range(k)])
    else:
        question = CATEGORICAL.question_for(mechanism)
    question.id = "q"
    return MessageToDict(question)


def test_epsilon_is_the_python_mechanisms_to_the_last_bit(page: Any) -> None:
    mechanisms = random_mechanisms(random.Random(int.from_bytes(os.urandom(8), "big")))
    epsilons = page.execute_script(EPSILON_OF, [question_json(m) for m in mechanisms])
    wrong = [
        (repr(mechanism), got, mechanism.epsilon)
        for mechanism, got in zip(mechanisms, epsilons, strict=True)
        if got != mechanism.epsilon or abs(got - mechanism.epsilon) > 1e-12
    ]
    assert not wrong, wrong[:5]
    print(f"\nepsilon: {len(mechanisms)} mechanisms, every one bit-identical")
