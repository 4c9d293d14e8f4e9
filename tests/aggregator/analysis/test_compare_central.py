"""Local randomized response against a curator's Laplace count: formulas, simulation, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from deniable.aggregator.analysis.simulation._compare_central import (
    central_theory,
    compare_local_central,
    sizes_up_to,
)
from deniable.aggregator.central.curator import discrete_laplace_pmf, noise_scale
from deniable.shared.mechanisms import RandomizedResponse
from tests.conftest import RunCli


@pytest.mark.parametrize(
    ("participants", "sizes"),
    [(2000, (20, 200, 2000)), (15, (15,)), (100_000, (10, 100, 1000, 10_000, 100_000)), (1, (1,))],
)
def test_sizes_are_the_participants_and_their_tenths(
    participants: int, sizes: tuple[int, ...]
) -> None:
    assert sizes_up_to(participants) == sizes


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_local_theory_is_the_reports_variance_given_the_sample(epsilon: float) -> None:
    """Each report is yes with probability (1 ± α)/2, so it varies by (1 − α²)/4 either way."""
    mechanism = RandomizedResponse.from_epsilon(epsilon)
    alpha = mechanism.alpha
    compared = compare_local_central(0.3, mechanism, (1, 10, 1000), repeats=2, seed=1)
    for row in compared.rows:
        n = row.participants
        variance = n * ((1 + alpha) / 2) * ((1 - alpha) / 2) / (n * alpha) ** 2
        assert row.local_theory**2 == pytest.approx(variance, rel=1e-9)
        closed = math.sqrt(math.exp(mechanism.epsilon) / n) / math.expm1(mechanism.epsilon)
        assert row.local_theory == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_central_theory_is_the_discrete_laplace_variance_summed_from_its_pmf(
    epsilon: float,
) -> None:
    scale = noise_scale(epsilon, 1)
    reach = int(60 * float(scale)) + 60
    variance = sum(z * z * discrete_laplace_pmf(z, scale) for z in range(-reach, reach + 1))
    for n in (1, 10, 1000):
        assert central_theory(epsilon, n) ** 2 == pytest.approx(variance / n**2, rel=1e-9)


def _fourth_moment(epsilon: float) -> tuple[float, float]:
    """E[Z²] and E[Z⁴] of the discrete Laplace of scale 1/ε, summed from its pmf."""
    scale = noise_scale(epsilon, 1)
    reach = int(80 * float(scale)) + 80
    z = range(-reach, reach + 1)
    second = sum(k**2 * discrete_laplace_pmf(k, scale) for k in z)
    fourth = sum(k**4 * discrete_laplace_pmf(k, scale) for k in z)
    return second, fourth


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_measured_errors_match_theory_and_scale_as_promised(epsilon: float) -> None:
    """Seeded: each model's mean squared error lies within its sampling law's 1e-4 tails.

    Local: given the sample the estimate is an affine map of a sum of Bernoulli reports,
    close to normal, so R·MSE/σ² follows χ²_R. Central: the MSE is a mean of R i.i.d.
    Z²/n², whose standard deviation follows from E[Z⁴] (summed from the pmf); R = 1,500 makes
    that mean close to normal.
    """
    repeats = 1500
    mechanism = RandomizedResponse.from_epsilon(epsilon)
    compared = compare_local_central(
        0.3, mechanism, (50, 5000), repeats=repeats, seed=int(epsilon * 10)
    )
    second, fourth = _fourth_moment(mechanism.epsilon)
    z = stats.norm.isf(1e-4 / 2)
    low, high = stats.chi2.ppf([1e-4 / 2, 1 - 1e-4 / 2], repeats) / repeats
    for row in compared.rows:
        local = (row.local_rmse / row.local_theory) ** 2
        assert low <= local <= high, (row, local)
        mse = row.central_rmse**2 * row.participants**2
        spread = math.sqrt((fourth - second**2) / repeats)
        assert abs(mse - second) <= z * spread, (row, mse, second)
    small, large = compared.rows
    assert large.ratio == pytest.approx(small.ratio * 10, rel=1e-9)  # √(5000/50)
    assert large.local_width < small.local_width / 5  # ~1/√n: 10× narrower in theory
    assert large.central_width <= small.central_width / 90  # ~1/n: 100× narrower


def test_the_central_interval_is_the_curators_exact_quantile() -> None:
    mechanism = RandomizedResponse.from_epsilon(1.0)
    compared = compare_local_central(0.5, mechanism, (1000,), repeats=2, seed=3)
    scale = noise_scale(mechanism.epsilon, 1)
    k = compared.rows[0].central_width * 1000 / 2
    assert k == int(k)
    inside = sum(discrete_laplace_pmf(z, scale) for z in range(-int(k), int(k) + 1))
    below = sum(discrete_laplace_pmf(z, scale) for z in range(-int(k) + 1, int(k)))
    assert inside >= 0.95 > below  # the least k with P(|Z| <= k) >= 95%


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 1.5}, r"p must be in \[0, 1\], got 1.5"),
        ({"repeats": 1}, "repeats"),
        ({"sizes": ()}, "sizes"),
        ({"sizes": (0,)}, "participants"),
        ({"mechanism": RandomizedResponse(1.0)}, "finite epsilon"),
    ],
)
def test_bad_settings_are_named(kwargs: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {
        "p": 0.3, "mechanism": RandomizedResponse.from_epsilon(1.0), "sizes": (10,), "repeats": 5,
    }  # fmt: skip
    settings |= kwargs
    with pytest.raises(ValueError, match=message):
        compare_local_central(**settings)  # type: ignore[arg-type]


SIMULATE = ("simulate", "--compare-central", "--p", "0.3", "--epsilon", "1", "--seed", "5")


def test_cli_json_has_one_row_per_size_and_says_against_whom(run_cli: RunCli) -> None:
    out = run_cli(
        "deniable-aggregator", *SIMULATE, "--participants", "1000", "--repeats", "50", "--json"
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [row["participants"] for row in data["rows"]] == [10, 100, 1000]
    assert data["repeats"] == 50
    assert data["randomness"] == "seeded-pcg64"
    assert data["epsilon"] == pytest.approx(1.0, abs=1e-6)
    assert "curator" in data["central"]["holds_against"]
    assert "operator" in data["local"]["holds_against"]
    assert all(row["ratio"] > 1 for row in data["rows"][1:])
    again = run_cli(
        "deniable-aggregator", *SIMULATE, "--participants", "1000", "--repeats", "50", "--json"
    )
    assert json.loads(again.stdout) == data  # seeded: reproducible


def test_cli_text_table_and_default_repeats(run_cli: RunCli) -> None:
    out = run_cli("deniable-aggregator", *SIMULATE, "--participants", "100")
    assert out.returncode == 0, out.stderr
    assert "200 repeats per size" in out.stdout
    lines = [line.split() for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [line[0] for line in lines] == ["10", "100"]
    assert "error ~ 1/sqrt(n)" in out.stdout
    assert "error ~ 1/n" in out.stdout
    assert "not the curator" in out.stdout


def test_cli_draws_the_plot(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    figure = tmp_path / "errors.svg"
    out = run_cli(
        "deniable-aggregator", *SIMULATE, "--participants", "100", "--repeats", "20",
        "--plot", str(figure),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    svg = figure.read_text()
    assert svg.startswith("<?xml")
    assert "<svg" in svg
    assert "participants n" in svg


def test_cli_without_matplotlib_names_the_extra(run_script: RunCli, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    figure = tmp_path / "errors.png"
    out = run_script(
        "deniable-aggregator", *SIMULATE, "--participants", "10", "--repeats", "2",
        "--plot", str(figure), env={"PYTHONPATH": str(shadow.parent)},
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "pip install 'deniable[plot]'" in out.stderr
    assert "Traceback" not in out.stderr
    assert not figure.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--type", "categorical", "--options", "3"), "--compare-central applies to --type binary"),
        (("--transport", "grpc"), "--transport does not apply"),
        (("--batch-size", "10"), "--batch-size does not apply"),
        (("--alpha", "1"), "finite epsilon"),
        (("--plot", "x.txt"), "'x.txt' must end in .png, .svg or .pdf"),
        (("--repeats", "1"), "repeats"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    run_cli: RunCli, args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    base = [a for a in SIMULATE if a not in ("--epsilon", "1")] if "--alpha" in args else SIMULATE
    out = run_cli("deniable-aggregator", *base, "--participants", "10", *args)
    assert out.returncode == 2, out
    assert message in out.stderr
    assert "Traceback" not in out.stderr
