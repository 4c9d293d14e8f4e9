"""``simulate`` reports how often each interval ever missed when looked at during collection."""

from __future__ import annotations

import json

from scipy import stats

from deniable.aggregator import simulate_binary
from deniable.aggregator.analysis.simulation._anytime import look_ends
from deniable.aggregator.analysis.simulation._categorical import simulate_categorical
from deniable.aggregator.analysis.simulation._numeric import simulate_numeric
from deniable.shared import RandomizedResponse
from deniable.shared.questions import categorical_mechanism, numeric_mechanism
from tests.conftest import RunCli

RUNS = 300
MOST = int(stats.binom.isf(1e-4 / 3, RUNS, 0.05))  # a valid 95% sequence ever misses this often
FEWEST = int(stats.binom.ppf(1e-4 / 3, RUNS, 0.15))  # the fixed-n interval, looked at 100 times


def test_looks_are_every_hundredth_of_the_survey_and_the_end() -> None:
    assert look_ends(1000).tolist() == list(range(10, 1001, 10))
    assert look_ends(1050).tolist()[-2:] == [1045, 1050]
    assert look_ends(7).tolist() == list(range(1, 8))


def test_binary_simulation_reports_ever_missed_under_repeated_looks() -> None:
    result = simulate_binary(2000, 0.3, RandomizedResponse(0.5), repeats=RUNS, seed=4)
    assert result.looks is not None
    assert (result.looks.looks, result.looks.every) == (100, 20)
    assert result.looks.anytime_ever_missed * RUNS <= MOST
    assert result.looks.fixed_ever_missed * RUNS >= FEWEST
    assert set(json.loads(json.dumps(result.to_dict()))["looks"]) == {
        "looks", "every", "anytime_ever_missed", "fixed_ever_missed"
    }  # fmt: skip
    assert simulate_binary(2000, 0.3, RandomizedResponse(0.5), seed=4).looks is None


def test_categorical_and_numeric_simulations_report_it_too() -> None:
    spec = categorical_mechanism("oue", 3, epsilon=1.0)
    result = simulate_categorical(1000, [0.5, 0.3, 0.2], spec, repeats=RUNS, seed=5)
    assert result.looks is not None
    assert result.looks.anytime_ever_missed * RUNS <= MOST
    assert result.looks.fixed_ever_missed * RUNS >= FEWEST
    numeric = numeric_mechanism("piecewise", 0.0, 10.0, 2.0)
    means = simulate_numeric(500, "beta:2,5", numeric, repeats=RUNS, seed=6)
    assert means.looks is not None
    assert means.looks.anytime_ever_missed * RUNS <= MOST
    assert means.looks.fixed_ever_missed * RUNS >= FEWEST


def test_simulate_prints_the_repeated_looks(run_cli: RunCli) -> None:
    args = ["simulate", "--participants", "500", "--p", "0.4", "--alpha", "0.5",
            "--repeats", "20", "--seed", "1", "--transport", "inprocess"]  # fmt: skip
    text = run_cli("deniable-aggregator", *args)
    assert text.returncode == 0, text.stderr
    assert "looked at every 5 reports (100 looks): the interval ever missed the truth in" in (
        text.stdout
    )
    assert "with --anytime (confidence sequence; at most 0.05)" in text.stdout
