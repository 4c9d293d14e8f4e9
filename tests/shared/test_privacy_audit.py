"""Empirical privacy audit of every shipped mechanism (see tests/shared/_audit.py).

Each mechanism is run as a black box (its real sampler, a seeded generator injected) N times
on two neighbouring inputs chosen to maximize the likelihood ratio, and the reports are
counted in the maximal-ratio event S, whose exact ratio is e^ε for the claimed ε:

    yes/no RR  truth 1 vs 0        S = {y = 1}                 (1+α)/(1−α)
    GRR        option 0 vs 1       S = {y = 0}                 1 + kα/(1−α)
    OUE        option 0 vs 1       S = {bit 0 set, bit 1 clear}   (1−q)/q
    OLH        option 0 vs 1       S = {y = H(0) ≠ H(1)}       1 + gα/(1−α)
    Laplace    hi vs lo            S = {y >= 1} (at or past hi)   e^ε
    Duchi      hi vs lo            S = {y = +B}                (B+1)/(B−1)
    Piecewise  hi vs lo            S = {cell >= L}: hi's window  ρ = P(high)/P(low)
    Hybrid     hi vs lo            both parts' events           <= max of the parts'

(OUE's "bit 0 set" alone has ratio (e^ε+1)/2 and OLH's "y = H(0)" has gα + 1 − α: true,
but too weak to pin ε; adding "bit 1 clear" / "H(1) ≠ H(0)" makes the ratio exactly e^ε.)

One-sided Clopper–Pearson bounds at level 10⁻⁶ per side (tests/_audit.py) certify a lower
bound on the true ε. For every shipped mechanism the audit must not flag the claimed ε, must
flag a claim understated by a stated margin, and must find the claim within its upper bound
(ε pinned from both sides). Mechanisms broken on purpose (the seed's α = ε/2; Laplace with
half the noise scale), built from the real samplers, must be flagged.

``python -m tests.test_privacy_audit`` prints the table of certified bounds.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from deniable.shared.mechanisms import (
    DuchiMechanism,
    GeneralizedRandomizedResponse,
    HybridMechanism,
    LaplaceMechanism,
    NumericMechanism,
    OlhReports,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    RandomizedResponse,
)
from deniable.shared.mechanisms._universal_hash import universal_hash
from deniable.shared.questions import categorical_mechanism, numeric_mechanism
from tests.shared._audit import (
    DEFAULT_CONFIDENCE,
    Audit,
    Event,
    Sampler,
    certified_epsilon,
    clopper_pearson_lower,
    clopper_pearson_upper,
    count_hits,
    epsilon_upper_bound,
    run_audit,
)

LO, HI = -3.0, 5.0  # numeric range; the audited inputs are its ends

# --- the harness's own checks -----------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(3, 10), (500, 1000), (1, 10**6), (999_990, 10**6)])
def test_clopper_pearson_bounds_have_their_defining_tail_probabilities(k: int, n: int) -> None:
    # lower: P(Bin(n, lower) >= k) = 1 − confidence; upper: P(Bin(n, upper) <= k) = same.
    level = 1 - DEFAULT_CONFIDENCE
    lower, upper = clopper_pearson_lower(k, n), clopper_pearson_upper(k, n)
    assert 0 < lower < k / n < upper < 1
    assert stats.binom.sf(k - 1, n, lower) == pytest.approx(level, rel=1e-6)
    assert stats.binom.cdf(k, n, upper) == pytest.approx(level, rel=1e-6)
    # Each side is one half of the exact two-sided interval at level 1 − 2·10⁻⁶.
    exact = stats.binomtest(k, n).proportion_ci(1 - 2 * level, method="exact")
    assert (lower, upper) == pytest.approx((exact.low, exact.high), rel=1e-9)


def test_certified_epsilon_in_closed_form() -> None:
    # All n hits versus none: lower = a^(1/n), upper = 1 − a^(1/n), a = 1 − confidence.
    root = 1e-6 ** (1 / 100)
    assert certified_epsilon(100, 100, 0, 100) == pytest.approx(
        float(np.log(root / (1 - root))), rel=1e-10
    )
    assert certified_epsilon(100, 100, 0, 100) == pytest.approx(1.909505560, abs=1e-9)
    assert epsilon_upper_bound(0, 100, 100, 100) == pytest.approx(-1.909505560, abs=1e-9)
    # 75% vs 25% of 10⁶ (randomized response at α = ½, ε = ln 3 = 1.0986...).
    assert certified_epsilon(750_000, 10**6, 250_000, 10**6) == pytest.approx(1.0876416, abs=1e-7)
    assert epsilon_upper_bound(750_000, 10**6, 250_000, 10**6) == pytest.approx(1.1096021, abs=1e-7)
    # Nothing observed certifies nothing; the bounds widen as confidence grows.
    assert certified_epsilon(0, 100, 0, 100) == -np.inf
    assert epsilon_upper_bound(100, 100, 0, 100) == np.inf
    assert certified_epsilon(75, 100, 25, 100, 0.99) > certified_epsilon(75, 100, 25, 100)


def test_harness_rejects_bad_counts_and_levels() -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson_lower(11, 10)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson_upper(0, 0)
    with pytest.raises(ValueError, match="confidence"):
        certified_epsilon(5, 10, 5, 10, confidence=1.0)
    with pytest.raises(ValueError, match="one boolean per report"):
        count_hits(
            lambda x, rng: x, lambda y: np.ones((len(y), 2), bool), 0, 5, np.random.default_rng(0)
        )


def test_audit_counts_in_batches_and_reports_both_figures() -> None:
    # A "mechanism" that reports its input unchanged: the event {y = 1} separates perfectly.
    def identity(x: NDArray[Any], rng: np.random.Generator) -> NDArray[Any]:
        return x

    def is_one(y: NDArray[Any]) -> NDArray[np.bool_]:
        return np.asarray(y == 1)

    rng = np.random.default_rng(0)
    assert count_hits(identity, is_one, 1, 1000, rng, batch=64) == 1000
    audit = run_audit("identity", identity, is_one, (1, 0), 100, claimed=1.0, seed=0)
    assert audit.hits == (100, 0)
    assert audit.certified == pytest.approx(1.909505560, abs=1e-9)
    assert audit.flags()
    assert not audit.flags(2.0)
    assert audit.estimate == np.inf
    assert audit.upper == np.inf
    assert "certified ε >= 1.9095 vs claimed ε = 1.0000" in audit.summary()


# --- how the audit sees each mechanism ----------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """A mechanism as the audit sees it: its sampler, event, neighbouring inputs and claim."""

    label: str
    claimed: float
    sample: Sampler[Any]
    event: Event[Any]
    inputs: tuple[Any, Any]

    def audit(self, n: int) -> Audit:
        """Run the audit with N = n per input and a seed derived from the label."""
        seed = zlib.crc32(self.label.encode())
        return run_audit(self.label, self.sample, self.event, self.inputs, n, self.claimed, seed)


def yes_no_probe(mechanism: RandomizedResponse) -> Probe:
    """Truth 1 vs 0, S = {y = 1}: (1+α)/2 vs (1−α)/2."""

    def sample(x: NDArray[Any], rng: np.random.Generator) -> NDArray[np.bool_]:
        return mechanism.perturb_many(x, rng=rng)

    def event(y: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return y

    label = f"{type(mechanism).__name__}(alpha={mechanism.alpha:.6g})"
    return Probe(label, mechanism.epsilon, sample, event, (True, False))


CategoricalMechanism = (
    GeneralizedRandomizedResponse | OptimizedUnaryEncoding | OptimizedLocalHashing
)


def categorical_probe(mechanism: CategoricalMechanism) -> Probe:
    """Option 0 vs 1 with the maximal-ratio event of each protocol."""

    def sample(x: NDArray[Any], rng: np.random.Generator) -> Any:
        return mechanism.perturb_many(x, rng=rng)

    event: Event[Any]
    if isinstance(mechanism, GeneralizedRandomizedResponse):

        def event(y: NDArray[np.int64]) -> NDArray[np.bool_]:
            # α + (1−α)/k vs (1−α)/k.
            return np.asarray(y == 0)

        label = f"GRR(k={mechanism.k}, alpha={mechanism.alpha:.6g})"
    elif isinstance(mechanism, OptimizedUnaryEncoding):

        def event(bits: NDArray[np.bool_]) -> NDArray[np.bool_]:
            # ½(1−q) vs q·½: the other k−2 bits are identically distributed, so ignored.
            return np.asarray(bits[:, 0] & ~bits[:, 1])

        label = f"OUE(k={mechanism.k}, q={mechanism.q:.6g})"
    else:
        g = mechanism.g

        def event(reports: OlhReports) -> NDArray[np.bool_]:
            # Given (a, b) with H(0) ≠ H(1): α + (1−α)/g vs (1−α)/g; (a, b) do not depend
            # on the input, so P(H(0) ≠ H(1)) is a common factor.
            a, b, y = reports
            h0, h1 = universal_hash(a, b, 0, g), universal_hash(a, b, 1, g)
            return np.asarray((y.astype(np.uint64) == h0) & (h0 != h1))

        label = f"OLH(k={mechanism.k}, g={g}, alpha={mechanism.alpha:.6g})"
    return Probe(label, mechanism.epsilon, sample, event, (0, 1))


def numeric_probe(mechanism: NumericMechanism) -> Probe:
    """Inputs hi vs lo, the event on the report side that hi favours most (normalized units)."""

    def sample(x: NDArray[Any], rng: np.random.Generator) -> NDArray[np.float64]:
        return mechanism.perturb_many(x, rng)

    event: Event[NDArray[np.float64]]
    if isinstance(mechanism, LaplaceMechanism):

        def event(y: NDArray[np.float64]) -> NDArray[np.bool_]:
            # Given j, P(y) ∝ exp(−|2^m(y+1)/2 − j|·ε/2^m); for every y >= 1 (at or past hi)
            # j = 2^m (hi) over j = 0 (lo) is exactly e^ε. P(S | hi) = 1/(1 + e^(−ε/2^m)).
            return np.asarray(y >= 1.0)

        label = f"{type(mechanism).__name__}(eps={mechanism.epsilon:.6g})"
    elif isinstance(mechanism, DuchiMechanism):

        def event(y: NDArray[np.float64]) -> NDArray[np.bool_]:
            # (B+1)/(2B) vs (B−1)/(2B).
            return np.asarray(y == mechanism.bound)

        label = f"Duchi(B={mechanism.bound:.6g})"
    elif isinstance(mechanism, PiecewiseMechanism):
        event = _piecewise_window(mechanism)
        label = f"Piecewise(W={mechanism.center_cells}, L={mechanism.outer_cells})"
    else:
        assert isinstance(mechanism, HybridMechanism)
        window = _piecewise_window(mechanism.piecewise)
        bound = mechanism.bound

        def event(y: NDArray[np.float64]) -> NDArray[np.bool_]:
            # Either part's event: the ratio of the mixture is at most the larger part's.
            return np.asarray((y == bound) | window(y))

        label = f"Hybrid(beta={mechanism.beta:.4g}, B={bound:.6g})"
    return Probe(label, mechanism.epsilon, sample, event, (HI, LO))


def _piecewise_window(spec: Any) -> Callable[[NDArray[np.float64]], NDArray[np.bool_]]:
    """Cells L..N−1: t = +1 (k = L) reports them w.p. P(high) each, t = −1 (k = 0) P(low).

    Cell i is reported as (2i + 1 − N)h, so cell >= L is y >= (2L + 1 − N)h; the windows of
    k = 0 (cells 0..W−1) and k = L do not meet since W <= L.
    """
    assert spec.center_cells <= spec.outer_cells
    threshold = float((2 * spec.outer_cells + 1 - spec.cells) * spec.half_step)
    grid = spec.report_valid

    def event(y: NDArray[np.float64]) -> NDArray[np.bool_]:
        return np.asarray((y >= threshold) & grid(y))

    return event


# --- every shipped mechanism, at its claimed ε --------------------------------------------

CATEGORICAL_N = 1_000_000  # vectorized samplers: ~0.1-0.2 s per 10⁶ reports
NUMERIC_N = 200_000  # exact numeric samplers: ~1-4 µs per report
# Margins by ε: a claim this far below the true ε must be flagged at that N. Each is the
# expected gap between ε and the certified bound, z₁₋₁₀⁻⁶·(σ̂₁ + σ̂₂) ≈ 4.75·(σ̂₁ + σ̂₂) for
# σ̂ the standard error of ln p̂, plus at least 8 standard errors of the estimate.
CATEGORICAL_MARGIN = {0.5: 0.05, 1.0: 0.05, 2.0: 0.07, 4.0: 0.16}
NUMERIC_MARGIN = {0.5: 0.07, 1.0: 0.09, 2.0: 0.14, 4.0: 0.32}


@dataclass(frozen=True)
class Case:
    """One audited configuration: how to build the probe, N per input and the pin margin."""

    name: str
    build: Callable[[], Probe]
    n: int
    margin: float


def _yes_no(eps: float) -> Callable[[], Probe]:
    return lambda: yes_no_probe(RandomizedResponse.from_epsilon(eps))


def _categorical(kind: str, k: int, eps: float) -> Callable[[], Probe]:
    return lambda: categorical_probe(
        cast(CategoricalMechanism, categorical_mechanism(kind, k, eps))
    )


def _numeric(kind: str, eps: float) -> Callable[[], Probe]:
    return lambda: numeric_probe(numeric_mechanism(kind, LO, HI, eps))


CASES: list[Case] = [
    *(Case(f"rr-eps{e}", _yes_no(e), CATEGORICAL_N, m) for e, m in CATEGORICAL_MARGIN.items()),
    *(
        Case(f"{kind}-k{k}-eps{e}", _categorical(kind, k, e), CATEGORICAL_N, m)
        for kind, k in (("grr", 6), ("oue", 6), ("olh", 100))
        for e, m in CATEGORICAL_MARGIN.items()
    ),
    *(
        Case(f"{kind}-eps{e}", _numeric(kind, e), NUMERIC_N, m)
        for kind in ("laplace", "duchi", "piecewise", "hybrid")
        for e, m in NUMERIC_MARGIN.items()
    ),
]


def _marks(case: Case) -> Sequence[pytest.MarkDecorator]:
    return [pytest.mark.slow] if case.n == NUMERIC_N else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASES])
def test_audit_pins_the_claimed_epsilon_from_both_sides(case: Case) -> None:
    probe = case.build()
    audit = probe.audit(case.n)
    # Not flagged at the claim: the claimed ε is not understated.
    assert not audit.flags(), f"claimed ε is violated: {audit.summary()}"
    # Flagged at the claim minus the margin: the audit has the power to see the true ε.
    assert audit.flags(probe.claimed - case.margin), (
        f"a claim of ε − {case.margin} would pass, the audit is too weak: {audit.summary()}"
    )
    # The claim is within the upper bound: the event really has ratio e^ε (ε not loose).
    assert probe.claimed <= audit.upper, f"claimed ε is loose: {audit.summary()}"


# --- mechanisms broken on purpose: the same harness must flag them ------------------------

BROKEN_N = 100_000  # N = 10⁵ catches α = ε/2 at ε >= 1


@dataclass(frozen=True)
class SeedApproximationRR(RandomizedResponse):
    """Broken: α = ε/2 taken from the seed's ε ≈ 2α, and 2α claimed as the exact ε.

    The real sampler runs with that α; its true ε is ln((1+α)/(1−α)) > 2α.
    """

    @classmethod
    def claiming(cls, epsilon: float) -> SeedApproximationRR:
        """The seed's mechanism for a requested ε: α = ε/2."""
        return cls(alpha=epsilon / 2)

    @property
    def epsilon(self) -> float:  # type: ignore[override]
        """The seed's approximation, wrongly presented as the guarantee."""
        return self.epsilon_approx


@dataclass(frozen=True)
class HalfScaleLaplace(LaplaceMechanism):
    """Broken: the real exact discrete Laplace sampler with half the scale 2^m/ε it claims.

    Everything else (input rounding, grid, clamp) is the product's; the true ε is 2ε.
    """

    @property
    def noise_scale_exact(self) -> Fraction:
        """Half the scale the claimed ε needs."""
        return super().noise_scale_exact / 2


@pytest.mark.parametrize("eps", [1.0, 1.5])
def test_audit_flags_randomized_response_with_the_seed_approximation(eps: float) -> None:
    broken = SeedApproximationRR.claiming(eps)
    true_epsilon = RandomizedResponse(broken.alpha).epsilon  # ln 3 at ε = 1, ln 7 at 1.5
    audit = yes_no_probe(broken).audit(BROKEN_N)
    assert broken.epsilon == eps < true_epsilon
    assert audit.flags(), f"α = ε/2 not caught: {audit.summary()}"
    # The certificate is sound for the true ε.
    assert audit.certified <= true_epsilon, audit.summary()


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_audit_flags_laplace_with_half_the_noise_scale(eps: float) -> None:
    broken = HalfScaleLaplace(LO, HI, epsilon=eps)
    assert broken.noise_scale_exact == LaplaceMechanism(LO, HI, 2 * eps).noise_scale_exact
    audit = numeric_probe(broken).audit(BROKEN_N)
    assert broken.epsilon == eps
    assert audit.flags(), f"half-scale Laplace not caught: {audit.summary()}"
    assert audit.certified <= 2 * eps, audit.summary()
    # The broken sampler's reports are still on the product's grid: only the scale changed.
    reports = broken.perturb_many(np.linspace(LO, HI, 9), np.random.default_rng(0))
    assert broken.validate_report(reports) is None


def main() -> None:  # pragma: no cover - a report for humans, not a test
    """Print the certified bound against the claimed ε for every case."""
    print(f"{'case':<22}{'N':>9}  {'mechanism':<34}{'claimed':>9}{'certified':>11}{'upper':>9}")
    for case in CASES:
        probe = case.build()
        audit = probe.audit(case.n)
        print(
            f"{case.name:<22}{case.n:>9}  {probe.label[:33]:<34}{probe.claimed:>9.4f}"
            f"{audit.certified:>11.4f}{audit.upper:>9.4f}"
        )
    for eps in (1.0, 1.5):
        audit = yes_no_probe(SeedApproximationRR.claiming(eps)).audit(BROKEN_N)
        print(f"broken rr α=ε/2 ε={eps}: {audit.summary()}")
    for eps in (0.5, 1.0, 2.0):
        audit = numeric_probe(HalfScaleLaplace(LO, HI, epsilon=eps)).audit(BROKEN_N)
        print(f"broken laplace half scale ε={eps}: {audit.summary()}")


if __name__ == "__main__":  # pragma: no cover
    main()
