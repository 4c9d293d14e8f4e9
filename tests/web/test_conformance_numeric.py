"""The page's numeric mechanisms in Chromium against the Python client: bytes, laws, ε, refusals.

Replay: the page and the Python client read the same bytes into the same report (report id
included), random streams and streams forcing the rare branches alike. Distribution: 10^5
reports drawn with WebCrypto follow the exact law the Python mechanism implies (Pearson's
χ², every p-value above 10^-4 over the number of such tests, Bonferroni: a correct page
fails one of them with probability below 10^-4). ε, the bytes read per report whatever the
answer, and what is refused (with the Python client's words) complete the contract.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format
from numpy.typing import NDArray
from scipy import stats

from deniable.client._answer import check_mechanism, parse_answer
from deniable.client._errors import RefusedError
from deniable.shared.mechanisms import (
    DuchiMechanism,
    HybridMechanism,
    LaplaceMechanism,
    NumericMechanism,
    PiecewiseMechanism,
)
from deniable.shared.mechanisms._numeric_sampling import exact_positions
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.web._numeric import (
    as_json,
    chi_square,
    crafts,
    laplace_cdf,
    merge_small,
    python_report,
    question,
)

LO, HI = -3.5, 10.25
REPLAYED: dict[str, NumericMechanism] = {
    "laplace ε=1": LaplaceMechanism(LO, HI, epsilon=1.0),
    "laplace ε=4, m=3": LaplaceMechanism(0.0, 1.0, epsilon=4.0, grid_bits=3),
    "duchi ε=1": DuchiMechanism.from_epsilon(LO, HI, 1.0),
    "duchi ε=4": DuchiMechanism.from_epsilon(0.0, 1.0, 4.0),
    "piecewise ε=1": PiecewiseMechanism.from_epsilon(LO, HI, 1.0),
    "piecewise ε=4": PiecewiseMechanism.from_epsilon(0.0, 1.0, 4.0),
    "hybrid ε=1": HybridMechanism.from_epsilon(LO, HI, 1.0),
    "hybrid ε=4": HybridMechanism.from_epsilon(0.0, 1.0, 4.0),
}
EXTRA: dict[str, NumericMechanism] = {
    "laplace ε=2^-20, m=30": LaplaceMechanism(0.0, 1.0, epsilon=2.0**-20, grid_bits=30),
    "piecewise W=3, L=5, g=2": PiecewiseMechanism(0.0, 1.0, 3, 5, 2),
    "hybrid β=0 (ε=0.5)": HybridMechanism.from_epsilon(LO, HI, 0.5),
    "hybrid β=3/8, W=3, L=5, g=2": HybridMechanism(0.0, 1.0, 0.375, 1.5, 3, 5, 2),
}
STREAMS, EXTRA_STREAMS = 200, 50


def truths(mechanism: NumericMechanism) -> list[str]:
    """The range's ends, its middle, a third of the way (rounded stochastically), a tiny offset."""
    lo, hi = mechanism.lo, mechanism.hi
    tiny = "5e-324" if lo == 0 else repr(lo + 2.0**-48)
    return [repr(lo), repr(hi), repr((lo + hi) / 2), repr(lo + (hi - lo) / 3), tiny]


REPLAY_JS = """
const [questions, cases] = arguments;
return cases.map(([index, truth, hex]) => {
  try { return window.deniable.replay(questions[index], truth, hex); }
  catch (error) { return {error: String(error)}; }
});
"""


def wire_of(report: dict[str, Any]) -> str:
    """The serialized report (hex) of the Python client's report in its JSON form."""
    return json_format.ParseDict(report, pb.Report()).SerializeToString().hex()


def test_replay_matches_the_python_client_byte_for_byte(page: Any) -> None:
    rng = np.random.default_rng(20_240_601)
    mechanisms = {**REPLAYED, **EXTRA}
    messages = [question(m) for m in mechanisms.values()]
    cases: list[list[Any]] = []
    expected: list[tuple[str, dict[str, Any], int]] = []  # (case, report, bytes read)

    def add(index: int, name: str, truth: str, data: bytes, what: str) -> int:
        report, replay = python_report(messages[index], truth, data)
        cases.append([index, truth, data[: replay.used + 16].hex()])
        expected.append((f"{name}, {truth!r}, {what}", report, replay.used))
        return replay.used

    crafted = 0
    for index, (name, mechanism) in enumerate(mechanisms.items()):
        count = STREAMS if name in REPLAYED else EXTRA_STREAMS
        extra = ["1_0", " 7.25\n"] if mechanism.lo == LO else []
        for truth in truths(mechanism) + extra:
            for _ in range(count):
                add(index, name, truth, rng.bytes(2048), "random")
        truth = truths(mechanism)[3]
        for craft in crafts(mechanism, float(truth)):
            base = rng.bytes(8192)
            _, clean = python_report(messages[index], truth, base)
            used = add(index, name, truth, craft.apply(base, clean.reads), craft.what)
            assert (used > clean.used) == craft.reads_more, (name, craft, used, clean.used)
            crafted += 1
    got = page.execute_script(REPLAY_JS, [as_json(m) for m in messages], cases)
    wrong = [
        (what, report, used, result)
        for (what, report, used), result in zip(expected, got, strict=True)
        if result
        != {"report": report, "used": used, "wire": wire_of(report)}  # the bytes sent, too
    ]
    assert not wrong, f"{len(wrong)} of {len(cases)} replays differ, e.g. {wrong[:3]}"
    print(f"\nreplay: {len(cases)} reports identical, {crafted} of them from crafted streams")
    assert crafted >= 60


# --- distributions ------------------------------------------------------------------------

DISTRIBUTIONS: dict[str, tuple[NumericMechanism, float]] = {
    "laplace ε=1": (LaplaceMechanism(LO, HI, epsilon=1.0), LO + (HI - LO) * 0.3),
    "laplace ε=4, m=3": (LaplaceMechanism(0.0, 1.0, epsilon=4.0, grid_bits=3), 2.3 / 8),
    "duchi ε=1": (DuchiMechanism.from_epsilon(LO, HI, 1.0), 1.0),
    "duchi ε=4": (DuchiMechanism.from_epsilon(0.0, 1.0, 4.0), 0.8),
    "piecewise ε=1": (PiecewiseMechanism.from_epsilon(LO, HI, 1.0), 2.0),
    "piecewise W=3, L=5, g=2 (ε≈2.46)": (PiecewiseMechanism(0.0, 1.0, 3, 5, 2), 0.3),
    "hybrid ε=1": (HybridMechanism.from_epsilon(LO, HI, 1.0), 2.0),
    "hybrid β=3/8, W=3, L=5, g=2 (ε≈2.46)": (HybridMechanism(0.0, 1.0, 0.375, 1.5, 3, 5, 2), 0.7),
}
DRAWS = 100_000
ALPHA = 1e-4 / len(DISTRIBUTIONS)  # Bonferroni: all pass with probability >= 1 − 10^-4

DRAW_JS = """
const [question, truth, draws] = arguments;
const reports = window.deniable.perturbMany(question, Array(draws).fill(truth));
const counts = new Map();
for (const report of reports) counts.set(report.number, (counts.get(report.number) ?? 0) + 1);
return [...counts];
"""


Ints = NDArray[np.int64]


def position(mechanism: NumericMechanism, truth: float) -> Fraction:
    (n,), den = exact_positions([truth], mechanism.lo, mechanism.hi)
    return Fraction(n, den)


def piecewise_bins(pm: PiecewiseMechanism, u: Fraction) -> list[tuple[int, Fraction]]:
    """(first cell, probability) of bins of cells on which P(cell) is constant, cut in tens."""
    outer, center, cells = pm.outer_cells, pm.center_cells, pm.cells
    k0, up = divmod(u * outer, 1)
    k0 = int(k0)
    cuts = sorted({0, cells, *(c for c in (k0, k0 + 1, k0 + center, k0 + center + 1) if c < cells)})
    high, low = pm.p_center_exact / center, (1 - pm.p_center_exact) / outer

    def cell_probability(cell: int) -> Fraction:
        return sum(
            (
                weight * (high if k <= cell < k + center else low)
                for k, weight in ((k0, 1 - up), (k0 + 1, up))
            ),
            Fraction(0),
        )

    bins: list[tuple[int, Fraction]] = []
    for start, end in itertools.pairwise(cuts):
        pieces = min(10, end - start)
        edges = [start + (end - start) * i // pieces for i in range(pieces + 1)]
        bins += [(a, (b - a) * cell_probability(a)) for a, b in itertools.pairwise(edges)]
    return bins


def binned(
    bins: list[tuple[int, Fraction]], cells: Ints, counts: Ints, scale: Fraction
) -> tuple[list[int], list[Fraction]]:
    """Observed counts and probabilities of bins merged until each expects at least 5."""
    starts = merge_small([s for s, _ in bins], [float(p * scale) * DRAWS for _, p in bins])
    which = np.searchsorted(starts, [s for s, _ in bins], side="right") - 1
    probabilities = [Fraction(0)] * len(starts)
    for group, (_, p) in zip(which.tolist(), bins, strict=True):
        probabilities[group] += p * scale
    observed = np.bincount(np.searchsorted(starts, cells, side="right") - 1, counts, len(starts))
    return observed.astype(int).tolist(), probabilities


def law(
    mechanism: NumericMechanism, truth: float, values: NDArray[np.float64], counts: Ints
) -> tuple[list[int], list[Fraction]]:
    """Observed counts and exact probabilities of the mechanism's bins for this truth."""
    u = position(mechanism, truth)
    if isinstance(mechanism, DuchiMechanism | HybridMechanism):
        bound = mechanism.bound
        duchi = (Fraction(bound) + 2 * u - 1) / (2 * Fraction(bound))
        two = [int(counts[values == bound].sum()), int(counts[values == -bound].sum())]
        if isinstance(mechanism, DuchiMechanism):
            return two, [duchi, 1 - duchi]
        beta = Fraction(mechanism.beta)
        pm, inside = mechanism.piecewise, np.abs(values) != bound
        cells = (np.ldexp(values[inside], pm.grid_bits).astype(np.int64) + pm.cells - 1) // 2
        observed, probabilities = binned(piecewise_bins(pm, u), cells, counts[inside], beta)
        return observed + two, [*probabilities, (1 - beta) * duchi, (1 - beta) * (1 - duchi)]
    if isinstance(mechanism, PiecewiseMechanism):
        cells = (np.ldexp(values, mechanism.grid_bits).astype(np.int64) + mechanism.cells - 1) // 2
        return binned(piecewise_bins(mechanism, u), cells, counts, Fraction(1))
    assert isinstance(mechanism, LaplaceMechanism)
    m = mechanism.grid_bits
    j0, up = divmod(u * (1 << m), 1)
    offsets = np.ldexp(values, m - 1).astype(np.int64) + (1 << (m - 1)) - int(j0)
    cdf = laplace_cdf(mechanism.epsilon, m, up)
    edges: list[int] = []  # upper ends of about 40 bins of equal probability
    for k in range(1, 40):
        low, high = -(1 << 40), 1 << 40
        while low < high:  # least d with F(d) >= k/40
            middle = (low + high) // 2
            low, high = (middle + 1, high) if cdf(middle) < k / 40 else (low, middle)
        if not edges or low > edges[-1]:
            edges.append(low)
    cumulative = [Decimal(0), *(cdf(d) for d in edges), Decimal(1)]
    probabilities = [Fraction(b - a) for a, b in itertools.pairwise(cumulative)]
    tally = np.bincount(np.searchsorted(edges, offsets, side="left"), counts, len(edges) + 1)
    return tally.astype(int).tolist(), probabilities


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_webcrypto_reports_follow_the_exact_law(page: Any, name: str) -> None:
    mechanism, truth = DISTRIBUTIONS[name]
    pairs = page.execute_script(DRAW_JS, as_json(question(mechanism)), repr(truth), DRAWS)
    values = np.array([v for v, _ in pairs], dtype=np.float64)
    counts = np.array([c for _, c in pairs], dtype=np.int64)
    assert counts.sum() == DRAWS
    assert mechanism.validate_report(values) is None  # every report is on the grid
    observed, probabilities = law(mechanism, truth, values, counts)
    assert sum(observed) == DRAWS
    statistic, df = chi_square(observed, [float(p) for p in probabilities])
    p_value = float(stats.chi2.sf(statistic, df))
    figures = f"χ² {statistic:.2f}, df {df}, p {p_value:.3g}"
    print(f"\n{name} (ε {mechanism.epsilon:.6g}), truth {truth!r}: {figures}")
    assert p_value > ALPHA, (name, statistic, df, p_value)


# --- ε, bytes per report, refusals, answers ------------------------------------------------


def epsilon_cases() -> list[NumericMechanism]:
    found: list[NumericMechanism] = [*REPLAYED.values(), *EXTRA.values()]
    for epsilon in (2.0**-20, 2.0**-19, 0.01, 0.5, 0.61, 0.62, 1.0, math.log(3), 4.0, 10.0, 50.0):
        found.append(DuchiMechanism.from_epsilon(-1e15, 1e15, epsilon))
        found.append(LaplaceMechanism(0.0, 100.0, epsilon=epsilon, grid_bits=7))
        if epsilon >= 2.0**-19:  # below, from_epsilon's grid_bits is -1: the wire cannot carry it
            found.append(PiecewiseMechanism.from_epsilon(-1e15, 1e15, epsilon))
            found.append(HybridMechanism.from_epsilon(-1e15, 1e15, epsilon))
    found += [
        DuchiMechanism(0.0, 1.0, 1.0 + 2.0**-52),
        DuchiMechanism(0.0, 1.0, 1e300),
        PiecewiseMechanism(0.0, 1.0, 1, 2, 0),
        PiecewiseMechanism(0.0, 1.0, (1 << 52) - 2, 2, 0),
        PiecewiseMechanism(0.0, 1.0, 7, (1 << 51) + 3, 51),
        HybridMechanism(0.0, 1.0, 0.0, 3.0, 3, 5, 2),
        HybridMechanism(0.0, 1.0, 1.0, 1.25, 3, 5, 2),
        HybridMechanism(0.0, 1.0, 2.0**-1074, 1.5, 3, 5, 2),
    ]
    return found


def test_the_page_computes_the_python_epsilon_exactly(page: Any) -> None:
    mechanisms = epsilon_cases()
    got = page.execute_script(
        "return arguments[0].map((q) => window.deniable.epsilonOf(q));",
        [as_json(question(m)) for m in mechanisms],
    )
    assert got == [m.epsilon for m in mechanisms]
    print(f"\nε: {len(mechanisms)} mechanisms, every ε identical")


COUNT_JS = """
const [question, truths, repeats] = arguments;
let drawn = 0;
const original = crypto.getRandomValues;
crypto.getRandomValues = function (array) {
  drawn += array.byteLength;
  return original.call(crypto, array);
};
try {
  return truths.map((truth) => Array.from({length: repeats}, () => {
    const before = drawn;
    window.deniable.perturbMany(question, [truth]);
    return drawn - before;
  }));
} finally {
  delete crypto.getRandomValues;
}
"""


def test_every_answer_draws_the_same_bytes_from_webcrypto(page: Any) -> None:
    sizes = {}
    for name, mechanism in {**REPLAYED, **EXTRA}.items():
        message = question(mechanism)
        candidates = truths(mechanism)
        drawn = page.execute_script(COUNT_JS, as_json(message), candidates, 20)
        assert page.execute_script("return Object.hasOwn(crypto, 'getRandomValues')") is False
        # The Python client reads as many for one report, with any bytes.
        _, replay = python_report(message, candidates[0], bytes(range(256)) * 16)
        assert {n for row in drawn for n in row} == {replay.used}, (name, drawn, replay.used)
        sizes[name] = replay.used
    print(f"\nbytes per report (report id included): {sizes}")


def numeric(mechanism: pb.Mechanism, lo: float = 0.0, hi: float = 1.0) -> pb.Question:
    return pb.Question(id="q1", numeric=pb.NumericQuestion(min=lo, max=hi), mechanism=mechanism)


def laplace(epsilon: float = 1.0, grid_bits: int = 10) -> pb.Mechanism:
    return pb.Mechanism(laplace=pb.NumericLaplace(epsilon=epsilon, grid_bits=grid_bits))


def piecewise(center: int = 3, outer: int = 5, bits: int = 2) -> pb.Mechanism:
    return pb.Mechanism(
        piecewise=pb.Piecewise(center_cells=center, outer_cells=outer, grid_bits=bits)
    )


def hybrid(
    beta: float = 0.5, bound: float = 1.5, center: int = 3, outer: int = 5, bits: int = 2
) -> pb.Mechanism:
    return pb.Mechanism(
        hybrid=pb.Hybrid(
            beta=beta, bound=bound, center_cells=center, outer_cells=outer, grid_bits=bits
        )
    )


def duchi(bound: float) -> pb.Mechanism:
    return pb.Mechanism(duchi=pb.Duchi(bound=bound))


NAN, INF = math.nan, math.inf
MAX = (1 << 64) - 1
SETTINGS = [
    numeric(laplace()),  # accepted: controls
    numeric(duchi(1.5), -1e15, 1e15),
    numeric(piecewise()),
    numeric(hybrid()),
    numeric(hybrid(0.0, 1.25)),
    numeric(hybrid(1.0, 1.25)),
    numeric(piecewise(1, 2, 0), 0.0, 1.0),
    numeric(laplace(), INF, 1.0),
    numeric(laplace(), 0.0, NAN),
    numeric(laplace(), 1.0, 1.0),
    numeric(laplace(), 2.0, 1.0),
    numeric(laplace(), -1e308, 1e308),
    numeric(laplace(), -2e15, 1.0),
    numeric(duchi(1.5), 0.0, 1e16),
    numeric(laplace(0.0)),
    numeric(laplace(NAN)),
    numeric(laplace(INF)),
    numeric(laplace(-1.0)),
    numeric(laplace(2.0**-21)),
    numeric(laplace(50.000000001)),
    numeric(laplace(1.0, 0)),
    numeric(laplace(1.0, 31)),
    numeric(laplace(1.0, (1 << 32) - 1)),
    numeric(duchi(1.0)),
    numeric(duchi(0.5)),
    numeric(duchi(-3.0)),
    numeric(duchi(NAN)),
    numeric(duchi(INF)),
    numeric(piecewise(0, 5, 2)),
    numeric(piecewise(3, 0, 2)),
    numeric(piecewise((1 << 52) + 1, 5, 2)),
    numeric(piecewise(3, MAX, 2)),
    numeric(piecewise(1 << 51, (1 << 51) + 1, 2)),
    numeric(piecewise(3, 5, 65)),
    numeric(piecewise(3, 5, (1 << 32) - 1)),
    numeric(piecewise(3, 1, 0)),
    numeric(piecewise(3, 4, 2)),
    numeric(piecewise(3, 1 << 52, 52)),
    numeric(hybrid(-0.1)),
    numeric(hybrid(1.5)),
    numeric(hybrid(NAN)),
    numeric(hybrid(0.5, 1.25)),
    numeric(hybrid(0.5, 1.75)),
    numeric(hybrid(0.5, 1.0)),
    numeric(hybrid(0.5, 1.5, 0)),
    numeric(hybrid(0.5, 1.5, 3, 5, 70)),
    numeric(hybrid(NAN, 1.0, 0)),
    pb.Question(id="q1", binary=pb.BinaryQuestion(), mechanism=laplace()),
    pb.Question(
        id="q1", categorical=pb.CategoricalQuestion(options=["a", "b"]), mechanism=duchi(2.0)
    ),
    pb.Question(id="q'1", mechanism=piecewise()),
]


def python_refusal(message: pb.Question) -> list[str] | None:
    try:
        check_mechanism(message)
    except RefusedError as error:
        return ["RefusedError", str(error)]
    return None


REFUSE_JS = """
return arguments[0].map((question) => {
  try { window.deniable.perturbMany(question, []); return null; }
  catch (error) { return [error.name, error.message]; }
});
"""


def test_the_page_refuses_what_the_python_client_refuses_in_its_words(page: Any) -> None:
    expected = [python_refusal(m) for m in SETTINGS]
    got = page.execute_script(REFUSE_JS, [as_json(m) for m in SETTINGS])
    assert got == expected
    assert sum(e is None for e in expected) == 7


ANSWERS = [
    "12.5", "10.25", "-3.5", "10.250000000000002", "-3.5000000000000004", " 7.25\n", "1_0",
    "1__0", "_1", "1_", "1_.5", "+1.5", "-0", "-0.0", ".5", "5.", "1e1", "1E+0_1", "1e1_0",
    "nan", "NaN", "-nan", "inf", "-Infinity", "0x1", "", " ", "abc", "1 2", "١٢", "١", "３.５",
    "7\u00a0", "\u200b7", "\x1c5\x1f", "\ufeff5", "\x855", "1e-400", "1e400", "4.35",
    "0.1", "'", "\"'", "\\", "é", "3\n4",
]  # fmt: skip


def python_parse(message: pb.Question, text: str) -> list[str] | None:
    try:
        parse_answer(text, message)
    except ValueError as error:
        return ["InvalidAnswerError", str(error)]
    return None


PARSE_JS = """
const [question, texts, hex] = arguments;
return texts.map((text) => {
  try { return window.deniable.replay(question, text, hex).report.number; }
  catch (error) { return [error.name, error.message]; }
});
"""


def test_answers_are_read_as_the_python_client_reads_them(page: Any) -> None:
    message = question(DuchiMechanism.from_epsilon(LO, HI, 1.0))
    data = bytes(range(256)) * 2
    expected = []
    for text in ANSWERS:
        refused = python_parse(message, text)
        expected.append(refused if refused else python_report(message, text, data)[0]["number"])
    got = page.execute_script(PARSE_JS, as_json(message), ANSWERS, data.hex())
    assert got == expected
    assert sum(not isinstance(e, list) for e in expected) == 19
