"""The page's reports from WebCrypto follow the exact output law the Python mechanism states.

For each mechanism at two ε, 10^5 reports of a fixed truth from ``perturbMany`` (the page's
CSPRNG, no seed) are tallied in the page and compared by Pearson's χ² test with the exact
probabilities computed from the Python mechanism's parameters: the report's law for yes/no
and GRR, every k-bit pattern (and every bit's marginal) for OUE and per-item randomized
response, and for OLH the hash-value offset (y − H_{a,b}(x)) mod g and the leading bits of
a and b. Cells expected below 5 are pooled. A test fails when its p-value is below
10^-4 / (number of tests): the whole module fails by chance with probability below 10^-4.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
from scipy.stats import chi2

from deniable.client._answer import parse_answer
from deniable.shared.mechanisms import (
    GeneralizedRandomizedResponse,
    ItemRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
)
from deniable.shared.mechanisms._universal_hash import HASH_PRIME
from tests.web._discrete import EPSILONS, Case, case

REPORTS = 100_000
CHUNK = 2_000
"""Reports per ``perturbMany`` call (fewer live objects at once: a third faster)."""
FAMILY_ALPHA = 1e-4

TALLY = """
const [batches, reports, chunk] = arguments;
const P = (1n << 61n) - 1n;
return batches.map(([question, truth, hash]) => {
  const counts = {};
  const top = [new Array(16).fill(0), new Array(16).fill(0)];
  const [x, g] = hash === null ? [0n, 1n] : hash.map(BigInt);
  for (let done = 0; done < reports; done += chunk) {
    for (const report of window.deniable.perturbMany(question, new Array(chunk).fill(truth))) {
      let key;
      if ("bit" in report) key = String(report.bit);
      else if ("optionFixed" in report) key = String(report.optionFixed);
      else if ("bits" in report) key = report.bits;
      else {
        const a = BigInt(report.hashed.a), b = BigInt(report.hashed.b);
        key = String((BigInt(report.hashed.valueFixed) - ((a * x + b) % P) % g + g) % g);
        top[0][Number(a >> 57n)] += 1;
        top[1][Number(b >> 57n)] += 1;
      }
      counts[key] = (counts[key] ?? 0) + 1;
    }
  }
  return {counts, top};
});
"""

OPTIONS = [f"o{i}" for i in range(10)]
QUESTIONS: dict[str, tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = {
    "rr": ({"type": "binary"}, ("yes",), ("no",)),
    "grr": ({"type": "categorical", "options": OPTIONS[:6], "mechanism": "grr"}, ("2",), ("o5",)),
    "oue": ({"type": "categorical", "options": OPTIONS[:4], "mechanism": "oue"}, ("1",), ("4",)),
    "olh": ({"type": "categorical", "options": OPTIONS, "mechanism": "olh"}, ("3",), ("10",)),
    "item_rr": ({"type": "multi_select", "items": list("abcde")}, ("a,c",), ("b,d,e",)),
}
"""Per mechanism: the question, and the truths tested at the first and the second ε."""


@dataclass(frozen=True)
class Law:
    """One χ² test: what is counted and each outcome's exact probability."""

    name: str
    counts: dict[str, int]
    probabilities: dict[str, Fraction]


def pearson(law: Law) -> tuple[float, int, float]:
    """χ², degrees of freedom and p-value, cells expected below 5 pooled (in order)."""
    total = sum(law.counts.values())
    assert set(law.counts) <= set(law.probabilities), set(law.counts) - set(law.probabilities)
    assert sum(law.probabilities.values()) == 1
    cells: list[tuple[float, int]] = []
    pooled_expected, pooled_observed = 0.0, 0
    for key, probability in law.probabilities.items():
        expected, observed = float(probability) * total, law.counts.get(key, 0)
        if expected < 5:
            pooled_expected, pooled_observed = (
                pooled_expected + expected,
                pooled_observed + observed,
            )
        else:
            cells.append((expected, observed))
    if pooled_expected > 0:
        cells.append((pooled_expected, pooled_observed))
    statistic = sum((observed - expected) ** 2 / expected for expected, observed in cells)
    df = len(cells) - 1
    return statistic, df, float(chi2.sf(statistic, df))


def bits_of(packed: str, k: int) -> tuple[bool, ...]:
    data = base64.b64decode(packed)
    return tuple(bool(data[i // 8] >> (i % 8) & 1) for i in range(k))


def pattern_laws(name: str, counts: dict[str, int], k: int, p_one: list[Fraction]) -> list[Law]:
    """Every k-bit pattern's law (independent bits, bit i one w.p. p_one[i]), and each bit's."""
    patterns: dict[tuple[bool, ...], Fraction] = {}
    for bits in itertools.product((False, True), repeat=k):
        probability = Fraction(1)
        for bit, p in zip(bits, p_one, strict=True):
            probability *= p if bit else 1 - p
        patterns[bits] = probability
    by_pattern = {bits_of(key, k): count for key, count in counts.items()}
    laws = [
        Law(
            f"{name} patterns",
            {_key(b): c for b, c in by_pattern.items()},
            {_key(b): p for b, p in patterns.items()},
        )
    ]
    for i in range(k):
        ones = sum(count for bits, count in by_pattern.items() if bits[i])
        total = sum(by_pattern.values())
        laws.append(
            Law(
                f"{name} bit {i}",
                {"1": ones, "0": total - ones},
                {"1": p_one[i], "0": 1 - p_one[i]},
            )
        )
    return laws


def _key(bits: tuple[bool, ...]) -> str:
    return "".join("1" if bit else "0" for bit in bits)


def laws_of(item: Case, truth: str, tally: dict[str, Any]) -> list[Law]:
    """The χ² tests of one batch, from the Python mechanism's parameters."""
    mechanism, counts = item.mechanism, tally["counts"]
    answer = parse_answer(truth, item.question)
    name = f"{item.name} truth {truth!r}"
    if isinstance(mechanism, RandomizedResponse):
        keep = mechanism.p_truth_exact
        told = {str(bool(answer)).lower(): keep, str(not answer).lower(): 1 - keep}
        return [Law(name, counts, told)]
    if isinstance(mechanism, GeneralizedRandomizedResponse):
        law = {
            str(v): mechanism.p_star_exact if v == answer else mechanism.q_star_exact
            for v in range(mechanism.k)
        }
        return [Law(name, counts, law)]
    if isinstance(mechanism, OptimizedUnaryEncoding):
        q = Fraction(mechanism.q)
        return pattern_laws(
            name,
            counts,
            mechanism.k,
            [Fraction(1, 2) if v == answer else q for v in range(mechanism.k)],
        )
    if isinstance(mechanism, ItemRandomizedResponse):
        q = Fraction(mechanism.q)
        chosen = [bool(int(answer) >> i & 1) for i in range(mechanism.k)]
        return pattern_laws(name, counts, mechanism.k, [1 - q if bit else q for bit in chosen])
    assert isinstance(mechanism, OptimizedLocalHashing)
    other = (1 - Fraction(mechanism.alpha)) / mechanism.g
    offsets = {str(d): mechanism.p_star_exact if d == 0 else other for d in range(mechanism.g)}
    step = Fraction(1 << 57, HASH_PRIME)
    leading = {str(j): step if j < 15 else 1 - 15 * step for j in range(16)}
    return [
        Law(f"{name} offset", counts, offsets),
        *(
            Law(f"{name} {which} >> 57", {str(j): c for j, c in enumerate(top)}, leading)
            for which, top in zip("ab", tally["top"], strict=True)
        ),
    ]


@pytest.fixture(scope="module")
def laws(page: Any) -> list[Law]:
    batches: list[tuple[Case, str]] = []
    for name, (spec, *truths_at) in QUESTIONS.items():
        for epsilon, truths in zip(EPSILONS, truths_at, strict=True):
            item = case(f"{name} {epsilon}", {**spec, "epsilon": epsilon}, truths)
            batches.extend((item, truth) for truth in truths)
    hashes = [
        [int(parse_answer(truth, item.question)), item.mechanism.g]
        if isinstance(item.mechanism, OptimizedLocalHashing)
        else None
        for item, truth in batches
    ]
    tallies = page.execute_script(
        TALLY,
        [[item.json, truth, hash_] for (item, truth), hash_ in zip(batches, hashes, strict=True)],
        REPORTS,
        CHUNK,
    )
    return [
        law
        for (item, truth), tally in zip(batches, tallies, strict=True)
        for law in laws_of(item, truth, tally)
    ]


def test_reports_follow_the_python_mechanisms_law(laws: list[Law]) -> None:
    threshold = FAMILY_ALPHA / len(laws)
    results = [(law.name, *pearson(law)) for law in laws]
    print(f"\n{len(laws)} chi-square tests of {REPORTS} reports; p-value threshold {threshold:.3g}")
    for name, statistic, df, p_value in results:
        print(f"{name}: chi2 = {statistic:.2f}, df = {df}, p = {p_value:.4f}")
    failed = [result for result in results if result[3] < threshold]
    assert not failed, failed
