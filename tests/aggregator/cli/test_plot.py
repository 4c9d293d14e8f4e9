"""``simulate --plot`` / ``--epsilons`` and ``plan --plot``: figures and the numbers they draw."""

from __future__ import annotations

import itertools
import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deniable.aggregator.analysis.simulation._sweep import (
    SweepPoint,
    SweepResult,
    coverage_band,
)
from deniable.aggregator.cli._plot import parse_epsilons
from deniable.aggregator.cli.plan._command import plan_command
from deniable.aggregator.cli.plan._plot import PlanCurves
from deniable.aggregator.cli.simulate._command import simulate_command
from tests.conftest import RunCli

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

SWEEP = (
    "simulate", "--type", "categorical", "--options", "3", "--distribution", "0.5,0.3,0.2",
    "--participants", "300", "--repeats", "20", "--epsilons", "1,4", "--mechanism", "grr,oue",
    "--seed", "7",
)  # fmt: skip
PLAN = ("plan", "--type", "categorical", "--options", "6", "--margin", "0.05")


def _sweep_of(data: dict[str, Any]) -> SweepResult:
    fields = dict(data)
    fields.pop("plot")
    points = tuple(SweepPoint(**point) for point in fields.pop("points"))
    return SweepResult(points=points, epsilons=tuple(fields.pop("epsilons")), **fields)


def _y(artist: Any) -> list[float]:
    """The y values a matplotlib line draws."""
    return [float(value) for value in artist.get_ydata()]


def test_simulate_sweep_json_text_and_figures_agree(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from deniable.aggregator.cli.simulate._sweep import figure_of

    svg, png = tmp_path / "sweep.svg", tmp_path / "sweep.PNG"
    out = run_cli("deniable-aggregator", *SWEEP, "--plot", str(svg), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["plot"] == str(svg)
    assert [(p["mechanism"], p["epsilon"]) for p in data["points"]] == [
        ("grr", 1.0), ("grr", 4.0), ("oue", 1.0), ("oue", 4.0)
    ]  # fmt: skip
    assert data["repeats"] == 20
    for point in data["points"]:
        assert 0 < point["rmse"] < point["mean_width"]
        # the mean over 3 options of covered/20: a whole number of sixtieths
        assert point["coverage"] * 60 == pytest.approx(round(point["coverage"] * 60))
    for mechanism in ("grr", "oue"):  # more privacy, more error
        low, high = (p for p in data["points"] if p["mechanism"] == mechanism)
        assert low["rmse"] > high["rmse"]
        assert low["mean_width"] > high["mean_width"]
    text = svg.read_text()
    assert text.startswith("<?xml")
    assert text.rstrip().endswith("</svg>")
    for label in ("grr", "oue", "binomial band", "epsilon per answer"):
        assert label in text
    # The figure draws exactly these numbers.
    sweep = _sweep_of(data)
    accuracy, coverage = figure_of(sweep).axes
    series = sweep.series()
    assert [_y(line) for line in accuracy.get_lines()] == [
        values
        for points in series.values()
        for values in ([p.rmse for p in points], [p.mean_width for p in points])
    ]
    first: Any = accuracy.get_lines()[0]
    assert [float(x) for x in first.get_xdata()] == [1.0, 4.0]
    bars: list[Any] = list(coverage.containers)
    assert [_y(bar.lines[0]) for bar in bars] == [
        [p.coverage for p in points] for points in series.values()
    ]
    band: Any = coverage.patches[0]
    assert (band.get_y(), band.get_y() + band.get_height()) == pytest.approx(
        (sweep.band_low, sweep.band_high)
    )
    # The same seed, as text, draws a PNG (suffix case ignored) and prints the same numbers.
    shown = CliRunner().invoke(simulate_command, [*SWEEP[1:], "--plot", str(png)])
    assert shown.exit_code == 0, shown.output
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    rows = [line.split() for line in shown.output.splitlines() if line[2:5] in ("grr", "oue")]
    for row, point in zip(rows, data["points"], strict=True):
        assert row[0] == point["mechanism"]
        assert float(row[2]) == pytest.approx(point["rmse"], rel=1e-3)
        assert float(row[3]) == pytest.approx(point["mean_width"], rel=1e-3)
        assert float(row[4]) == pytest.approx(point["coverage"], abs=1e-4)
    assert f"[{data['band_low']:.4f}, {data['band_high']:.4f}]" in shown.output
    assert f"Plot: {png}" in shown.output


def _binomial_cdf(n: int, p: float) -> list[float]:
    """P(Y <= k) for k = 0..n, Y ~ Binomial(n, p), summed exactly in fractions."""
    exact = Fraction(p)
    pmf = [math.comb(n, k) * exact**k * (1 - exact) ** (n - k) for k in range(n + 1)]
    return [float(total) for total in itertools.accumulate(pmf)]


@pytest.mark.parametrize(("repeats", "nominal"), [(200, 0.95), (20, 0.95), (300, 0.9)])
def test_coverage_band_is_the_exact_binomial_quantiles(repeats: int, nominal: float) -> None:
    low, high = coverage_band(repeats, nominal)
    cdf = _binomial_cdf(repeats, nominal)
    k_low = next(k for k, total in enumerate(cdf) if total >= 0.025)
    k_high = next(k for k, total in enumerate(cdf) if total >= 0.975)
    assert (low, high) == (k_low / repeats, k_high / repeats)
    assert low < nominal < high


@pytest.mark.parametrize(
    ("text", "message"),
    [("1,x", "'x'"), ("0,1", "'0'"), ("1,inf", "'inf'"), ("2,1", "'1' after 2"), ("1,1", "'1'")],
)
def test_bad_epsilons_are_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_epsilons(text)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--epsilons", "1,-2"), "Invalid value for --epsilons: each epsilon must be finite and "
         "positive, got '-2'"),
        (("--plot", "{tmp}/out.jpg"), "out.jpg' must end in .png, .svg or .pdf"),
        (("--plot", "{tmp}/out"), "out' must end in .png, .svg or .pdf"),
        (("--epsilon", "1", "--plot", "{tmp}/out.png"), "--epsilon does not apply to a sweep"),
        (("--transport", "grpc", "--epsilons", "1"), "--transport does not apply to a sweep"),
        (("--repeats", "1", "--epsilons", "1"), "repeats must be"),
        (("--mechanism", "grr,nope", "--epsilons", "1"), "nope"),
        (("--type", "numeric", "--min", "0", "--max", "1", "--distribution", "uniform",
          "--method", "wald", "--epsilons", "1"), "--method does not apply to --type numeric"),
        (("--type", "joint", "--part", "a", "--plot", "{tmp}/out.png"),
         "apply to --type binary, categorical or numeric, not joint"),
    ],
)  # fmt: skip
def test_simulate_bad_plot_input_is_exit_2_naming_it(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    base = ["--participants", "10", "--seed", "1"]
    if "--type" not in args:
        base += ["--type", "categorical", "--options", "3", "--distribution", "0.5,0.3,0.2"]
    given = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    out = CliRunner().invoke(simulate_command, [*base, *given])
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert list(tmp_path.iterdir()) == []


def test_without_matplotlib_both_commands_name_the_extra_and_write_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for module in [name for name in sys.modules if name.startswith("matplotlib")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    figure = tmp_path / "figure.png"
    for command, args in (
        (simulate_command, ["--p", "0.3", "--participants", "10", "--seed", "1"]),
        (plan_command, ["--epsilon", "1", "--margin", "0.05"]),
    ):
        out = CliRunner().invoke(command, [*args, "--plot", str(figure)])
        assert out.exit_code == 2, out.output
        assert "Error: --plot needs matplotlib: pip install 'deniable[plot]'" in out.output
        assert "Traceback" not in out.output
        assert "Participants" not in out.output
        assert "Accuracy" not in out.output
    assert not figure.exists()


def test_plan_plot_draws_what_the_plan_prints(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from deniable.aggregator.cli.plan._plot import figure_of

    svg = tmp_path / "plan.svg"
    out = run_cli("deniable-aggregator", *PLAN, "--epsilon", "1", "--epsilons", "0.5,2,4",
                  "--plot", str(svg), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    plot = data["plot"]
    assert plot["epsilons"] == [0.5, 2.0, 4.0]
    assert list(plot["mechanisms"]) == [row["mechanism"] for row in data["mechanisms"]]
    assert plot["chosen_epsilon"] == pytest.approx(1.0)
    # Each curve at ε = 2 is what `plan --epsilon 2` prints for that mechanism.
    at_two = json.loads(run_cli("deniable-aggregator", *PLAN, "--epsilon", "2", "--json").stdout)
    for row in at_two["mechanisms"]:
        curve = plot["mechanisms"][row["mechanism"]]
        assert curve["participants"][1] == row["participants"]
        assert curve["margin"][1] == pytest.approx(row["margin"])
        assert curve["participants"][0] > curve["participants"][1] > curve["participants"][2]
    text = svg.read_text()
    assert text.startswith("<?xml")
    assert "participants needed" in text
    curves = PlanCurves(**{**plot, "epsilons": tuple(plot["epsilons"])})
    axes = figure_of(curves, data["confidence"]).axes[0]
    drawn = [_y(line) for line in axes.get_lines()][: len(plot["mechanisms"])]
    assert drawn == [curve["participants"] for curve in plot["mechanisms"].values()]


def test_plan_plot_binary_with_participants_draws_the_margin(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "plan.png"
    out = run_cli("deniable-aggregator", "plan", "--alpha", "0.5", "--participants", "1000",
                  "--epsilons", "1,2", "--plot", str(png), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data["plot"]["mechanisms"]) == ["rr"]
    assert data["plot"]["participants"] == 1000
    margins = data["plot"]["mechanisms"]["rr"]["margin"]
    one = run_cli("deniable-aggregator", "plan", "--epsilon", "2", "--participants", "1000",
                  "--json")  # fmt: skip
    one = json.loads(one.stdout)
    assert margins[1] == pytest.approx(one["margin"])
    assert margins[0] > margins[1]
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    pdf = tmp_path / "plan.pdf"
    out = run_cli("deniable-aggregator", "plan", "--alpha", "0.5", "--participants", "1000",
                  "--epsilons", "1,2", "--plot", str(pdf))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert pdf.read_bytes().startswith(b"%PDF-")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--plot", "{tmp}/plan.jpg"), "plan.jpg' must end in .png, .svg or .pdf"),
        (("--epsilons", "1,2"), "--epsilons needs --plot"),
        (("--plot", "{tmp}/plan.svg", "--epsilons", "2,1"), "got '1' after 2"),
    ],
)
def test_plan_bad_plot_input_is_exit_2_naming_it(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    given = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    out = CliRunner().invoke(plan_command, [*PLAN[1:], "--epsilon", "1", *given])
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert list(tmp_path.iterdir()) == []
