"""The notes' mean with a public N: Δ = (max − min)/N, the whole ε, against the split mean."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from deniable.aggregator.central.curator import (
    CuratorError,
    PrivacyUnit,
    SumSpec,
    _noise,
    discrete_half_width,
    midpoint_units,
    noisy_mean,
    noisy_mean_public_n,
)
from deniable.shared.sampling import generator_source

ROWS = PrivacyUnit()
AGES = SumSpec.build("age", "int", 18, 70, None)


def _no_noise(scale: Fraction, size: int, source: Any) -> NDArray[np.int64]:
    return np.zeros(size, dtype=np.int64)


def test_the_estimand_counts_a_missing_cell_as_the_midpoint_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_noise, "discrete_laplace", _no_noise)
    assert midpoint_units(AGES) == 44
    # 3 rows: 20, 30 and a missing cell (44): mean 94/3
    result = noisy_mean_public_n(50, 2, 3, AGES, 1.0, "replace", ROWS)
    assert result.released == pytest.approx(94 / 3)
    assert result.sensitivity == pytest.approx(52 / 3)  # (max − min)/N
    assert result.scale == pytest.approx(52 / 3)  # at the whole ε = 1
    document = result.to_dict()
    assert "midpoint 44.0" in document["interval"]["covers"]
    assert "N = 3" in document["interval"]["covers"]
    assert "public N" in document["method"]
    assert document["privacy_unit"]["max_contributions"] == 1
    assert document["epsilon"] == 1.0


def test_the_public_mean_is_only_for_replace_with_rows_as_units() -> None:
    with pytest.raises(CuratorError, match="--neighbours: the mean with a public N needs replace"):
        noisy_mean_public_n(50, 2, 3, AGES, 1.0, "add-remove", ROWS)
    with pytest.raises(CuratorError, match="--privacy-unit: the mean with a public N needs each"):
        noisy_mean_public_n(50, 2, 3, AGES, 1.0, "replace", PrivacyUnit("person", 1))
    with pytest.raises(CuratorError, match="2 rows with a value is more than N = 1"):
        noisy_mean_public_n(50, 2, 1, AGES, 1.0, "replace", ROWS)
    with pytest.raises(CuratorError, match="the public row count N must be an integer >= 1"):
        noisy_mean_public_n(0, 0, 0, AGES, 1.0, "replace", ROWS)


def test_interval_widths_against_the_split_mean_at_the_same_epsilon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exact widths with the noise held at 0, N = 1000 ages in [18, 70], ε = 1, 95%.

    Public N: Σ + Z, Z of scale (70 − 18)/ε = 52 steps, over N: width 2·k₁/N, k₁ the 95%
    quantile at scale 52. Split: the sum at ε/2 with Δ = max(70, 0) − min(18, 0) = 70 (a row
    may stop contributing), scale 140, and the count at ε/2, scale 2, each at 97.5%: k_s and
    k_c. The count is clamped to [0, N], so the mean lies in [(S − k_s)/N, (S + k_s)/(N − k_c)].
    """
    monkeypatch.setattr(_noise, "discrete_laplace", _no_noise)
    n, total = 1000, 44_321
    public = noisy_mean_public_n(total, n, n, AGES, 1.0, "replace", ROWS)
    split = noisy_mean(total, n, AGES, 1.0, "replace", ROWS, rows=n)
    k1 = discrete_half_width(Fraction(52), 0.95)
    k_s = discrete_half_width(Fraction(140), 0.975)
    k_c = discrete_half_width(Fraction(2), 0.975)
    assert (k1, k_s, k_c) == (156, 516, 7)
    assert public.half_width == pytest.approx(k1 / n)
    assert public.high - public.low == pytest.approx(2 * k1 / n, rel=1e-12)
    split_width = (total + k_s) / (n - k_c) - (total - k_s) / n
    assert split.high - split.low == pytest.approx(split_width, rel=1e-12)
    ratio = (split.high - split.low) / (public.high - public.low)
    assert ratio == pytest.approx(split_width / (2 * k1 / n), rel=1e-12)
    assert ratio == pytest.approx(4.3207, abs=1e-4)  # the split is 4.3× wider here
    # The sum part alone: 2·Δ_split/Δ_public = 140/52 in scale, k_s/k1 in quantile.
    assert split.total.scale / (public.scale * n) == pytest.approx(140 / 52)


@pytest.mark.slow
def test_the_public_mean_covers_at_least_the_confidence() -> None:
    """Seeded: misses of the midpoint-filled mean are at most Binomial(n, α)'s 1e-6 quantile."""
    rng = np.random.default_rng(31)
    ages = rng.integers(18, 71, size=50)
    present = ages[:45]  # 5 missing cells, each counted as 44
    units = int(sum(AGES.units(int(a)) for a in present))
    true = (units + 5 * 44) / 50
    source = generator_source(np.random.default_rng(32))
    trials, confidence = 1500, 0.8
    results = [
        noisy_mean_public_n(units, 45, 50, AGES, 1.0, "replace", ROWS, confidence=confidence,
                            source=source)
        for _ in range(trials)
    ]  # fmt: skip
    misses = sum(not (r.low <= true <= r.high) for r in results)
    assert misses <= stats.binom.ppf(1 - 1e-6, trials, 1 - confidence)
    assert all(18 <= r.low <= r.released <= r.high <= 70 for r in results)
    # The released mean sits on the grid over N: N·released is an integer number of steps.
    assert all(abs(r.released * 50 - round(r.released * 50)) < 1e-9 for r in results)
