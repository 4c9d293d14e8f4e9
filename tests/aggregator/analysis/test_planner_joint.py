"""Planning a joint question's correlation: Var1 against seeded surveys, n against the margin."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from deniable.aggregator.analysis.planning._joint import plan_associations
from deniable.shared.mechanisms import FrequencyOracle, Tally
from deniable.shared.questions import JOINT, question_from_spec
from deniable.shared.stats import normal_quantile
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli

CELLS = (0.5, 0.1, 0.1, 0.3)  # (no,no), (no,yes), (yes,no), (yes,yes): correlation 7/12


def _joint(mechanism: str) -> tuple[pb.Question, FrequencyOracle]:
    spec = {"id": "q", "text": "t", "type": "joint", "epsilon": 2.0, "mechanism": mechanism,
            "parts": [{"id": "cheated", "text": "c"}, {"id": "copied", "text": "p"}]}  # fmt: skip
    question, oracle = question_from_spec(spec, "q")
    assert isinstance(oracle, FrequencyOracle)
    return question, oracle


@pytest.mark.parametrize("name", ["grr", "oue"])
def test_variance_one_is_the_spread_of_estimated_correlations(name: str) -> None:
    """Var1/n against the variance of the correlation over 1,500 seeded surveys of n = 3,000.

    The sample variance of R runs lies within the χ²_{R−1} law's 1e-4 tails of the true
    one; the delta method's own error at this n is far smaller than that band (±13%).
    """
    question, oracle = _joint(name)
    (plan,) = plan_associations(question, oracle, CELLS, participants=3000)
    assert plan.correlation == pytest.approx(7 / 12)
    rng = np.random.default_rng(18)
    runs, n = 1500, 3000
    rhos = np.empty(runs)
    for run in range(runs):
        truths = rng.choice(4, size=n, p=CELLS)
        tally = Tally(n, tuple(oracle.tally(oracle.perturb_many(truths, rng))))
        message = pb.Estimate(**oracle.estimate(tally, 0.95).wire_fields(question))
        JOINT.complete_estimate(question, oracle, message)
        rhos[run] = message.associations[0].correlation
    ratio = rhos.var(ddof=1) / (plan.correlation_variance_one / n)
    low, high = stats.chi2.ppf([1e-4 / 2, 1 - 1e-4 / 2], runs - 1) / (runs - 1)
    assert low <= ratio <= high, ratio


def test_participants_are_the_least_n_within_the_margin() -> None:
    question, oracle = _joint("auto")
    (plan,) = plan_associations(question, oracle, CELLS, margin=0.05)
    z = normal_quantile(0.95)
    assert plan.correlation_margin <= 0.05
    assert z * math.sqrt(plan.correlation_variance_one / (plan.participants - 1)) > 0.05
    (again,) = plan_associations(question, oracle, CELLS, participants=plan.participants)
    assert again.correlation_margin == pytest.approx(plan.correlation_margin)


def test_bad_cells_are_named() -> None:
    question, oracle = _joint("grr")
    with pytest.raises(ValueError, match="4"):
        plan_associations(question, oracle, (0.5, 0.5), margin=0.05)
    with pytest.raises(ValueError, match="exactly one"):
        plan_associations(question, oracle, CELLS)


PLAN = ["deniable-aggregator", "plan", "--type", "joint", "--part", "cheated", "--part",
        "copied", "--epsilon", "2"]  # fmt: skip


def test_cli_plans_the_correlation_with_the_cells(run_cli: RunCli) -> None:
    done = run_cli(*PLAN, "--margin", "0.05", "--distribution", "0.5,0.1,0.1,0.3", "--json")
    assert done.returncode == 0, done.stderr
    (pair,) = json.loads(done.stdout)["associations"]
    assert (pair["part_a"], pair["part_b"]) == ("cheated", "copied")
    assert pair["correlation_margin"] <= 0.05
    text = run_cli(*PLAN, "--margin", "0.05", "--distribution", "0.5,0.1,0.1,0.3")
    assert f"{pair['participants']:,} participants for ±" in text.stdout
    assert "Correlation of cheated and copied (assumed 0.5833" in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--distribution", "0.5,0.5"], "4"),
        (["--distribution", "0.5,x,0.1,0.4"], "'x' is not a number"),
    ],
)
def test_cli_bad_cells_exit_2(run_cli: RunCli, args: list[str], message: str) -> None:
    done = run_cli(*PLAN, "--margin", "0.05", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_distribution_is_for_joint_plans_only(run_cli: RunCli) -> None:
    done = run_cli("deniable-aggregator", "plan", "--type", "categorical", "--options", "3",
                   "--epsilon", "1", "--margin", "0.05",
                   "--distribution", "0.5,0.3,0.2")  # fmt: skip
    assert done.returncode == 2
    assert "--distribution does not apply to --type categorical" in done.stderr
