"""Joint questions: the covariance of cell estimates, and coverage of the joint intervals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from deniable.shared.mechanisms import FrequencyOracle, Tally
from deniable.shared.questions import JOINT, question_from_spec
from deniable.shared.wire.v1 import aggregator_pb2 as pb

TWO_BY_TWO: list[dict[str, object]] = [
    {"id": "cheated", "text": "c"},
    {"id": "copied", "text": "p"},
]
# True cells (no,no), (no,yes), (yes,no), (yes,yes): correlation 7/12.
CELLS = np.array([0.5, 0.1, 0.1, 0.3])


def joint(
    mechanism: str, parts: list[dict[str, object]] = TWO_BY_TWO, epsilon: float = 2.0
) -> tuple[pb.Question, FrequencyOracle]:
    spec = {"id": "q", "text": "t", "type": "joint", "epsilon": epsilon,
            "mechanism": mechanism, "parts": parts}  # fmt: skip
    question, oracle = question_from_spec(spec, "q")
    assert isinstance(oracle, FrequencyOracle)
    return question, oracle


def estimate(
    question: pb.Question, oracle: FrequencyOracle, tally: Tally, **kw: bool
) -> pb.Estimate:
    result = oracle.estimate(tally, 0.95, simultaneous=kw.get("simultaneous", False))
    message = pb.Estimate(**result.wire_fields(question))
    JOINT.complete_estimate(question, oracle, message, simultaneous=kw.get("simultaneous", False))
    return message


@pytest.mark.parametrize("name", ["grr", "oue"])
def test_cell_covariance_matches_the_reports(name: str) -> None:
    """Σ of the raw cell estimates (population) against 4000 seeded surveys of n=300."""
    _, oracle = joint(name)
    rng = np.random.default_rng(7)
    n, runs = 300, 4000
    raws = np.empty((runs, 4))
    for run in range(runs):
        truths = rng.choice(4, size=n, p=CELLS)
        counts = oracle.support_counts(oracle.perturb_many(truths, rng))
        raws[run] = (counts / n - oracle.q_star) / (oracle.p_star - oracle.q_star)
    empirical = np.cov(raws, rowvar=False)
    theory = oracle.covariance_unchecked(CELLS, n)
    # Each entry of a sample covariance from 4000 runs is within ~5% of its scale here; the
    # off-diagonal terms differ by mechanism (GRR's are about 3x OUE's), so a formula
    # missing them is far outside this.
    scale = np.sqrt(np.outer(np.diag(theory), np.diag(theory)))
    assert np.max(np.abs(empirical - theory) / scale) < 0.08


def test_marginals_are_sums_of_cells_and_named() -> None:
    parts: list[dict[str, object]] = [
        {"id": "dept", "type": "categorical", "options": ["HR", "IT", "Ops"]},
        {"id": "hours", "type": "numeric", "edges": [0, 10, 40, 60]},
    ]
    question, oracle = joint("grr", parts)
    assert oracle.k == 9
    counts = [5, 1, 0, 2, 7, 1, 0, 3, 9]
    message = estimate(question, oracle, Tally(28, tuple(counts)))
    assert message.options[5].option == "dept=IT, hours=[40, 60]"
    cells = np.array([o.estimate for o in message.options]).reshape(3, 3)
    dept, hours = message.marginals
    assert [v.option for v in hours.values] == ["[0, 10)", "[10, 40)", "[40, 60]"]
    assert np.allclose([v.estimate for v in dept.values], cells.sum(axis=1))
    assert np.allclose([v.estimate for v in hours.values], cells.sum(axis=0))
    assert [v.support for v in dept.values] == [6, 10, 12]
    assert not message.associations  # a multiple-choice part has no covariance


def _coverage(name: str, simultaneous: bool, runs: int, n: int) -> dict[str, int]:
    question, oracle = joint(name)
    rng = np.random.default_rng(2026)
    truth_marginals = [CELLS[2] + CELLS[3], CELLS[1] + CELLS[3]]
    mean_a, mean_b = truth_marginals
    true_cov = CELLS[3] - mean_a * mean_b
    true_rho = true_cov / np.sqrt(mean_a * (1 - mean_a) * mean_b * (1 - mean_b))
    misses = {"marginal": 0, "marginals_all": 0, "covariance": 0, "correlation": 0}
    for _ in range(runs):
        truths = rng.choice(4, size=n, p=CELLS)
        tally = Tally(n, tuple(oracle.tally(oracle.perturb_many(truths, rng))))
        message = estimate(question, oracle, tally, simultaneous=simultaneous)
        covered = []
        for marginal, truth in zip(message.marginals, truth_marginals, strict=True):
            yes = marginal.values[1]
            covered.append(yes.ci_low <= truth <= yes.ci_high)
            no = marginal.values[0]
            covered.append(no.ci_low <= 1 - truth <= no.ci_high)
        misses["marginal"] += not covered[0]
        misses["marginals_all"] += not all(covered)
        (pair,) = message.associations
        misses["covariance"] += not pair.covariance_low <= true_cov <= pair.covariance_high
        misses["correlation"] += not pair.correlation_low <= true_rho <= pair.correlation_high
    return misses


@pytest.mark.parametrize("name", ["grr", "oue"])
def test_delta_method_intervals_cover(name: str) -> None:
    """95% intervals from 2000 seeded surveys of n=2000 at ε=2.

    A true miss rate of 5% gives more misses than the threshold with chance below 1e-4; an
    interval missing 10% or more of the time stays under it with chance below 1e-6.
    """
    runs = 2000
    high = stats.binom.isf(1e-4, runs, 0.05)
    assert stats.binom.cdf(high, runs, 0.10) < 1e-6
    misses = _coverage(name, simultaneous=False, runs=runs, n=2000)
    for what in ("marginal", "covariance", "correlation"):
        assert misses[what] <= high, (what, misses)


def test_simultaneous_marginals_cover_together() -> None:
    """With --simultaneous the four marginal intervals cover at once about 95% of runs."""
    runs = 1500
    high = stats.binom.isf(1e-4, runs, 0.05)
    per_value = _coverage("grr", simultaneous=False, runs=runs, n=2000)["marginals_all"]
    together = _coverage("grr", simultaneous=True, runs=runs, n=2000)["marginals_all"]
    assert together <= high
    assert together < per_value  # Bonferroni widens them


def test_parts_of_a_joint_answer_give_its_cell() -> None:
    parts: list[dict[str, object]] = [
        {"id": "a"},
        {"id": "dept", "type": "categorical", "options": ["HR", "IT", "Ops"]},
        {"id": "h", "type": "numeric", "min": 0, "max": 60, "bins": 3},
    ]
    question, oracle = joint("auto", parts)
    assert oracle.k == 18
    cells = {
        JOINT.parse_answer(f"{a},{d},{h}", question)
        for a, d, h in itertools.product(["no", "yes"], ["HR", "it", "3"], ["0", "20", "60"])
    }
    assert cells == set(range(18))
    assert JOINT.parse_answer("yes,IT,19.99", question) == 9 + 3 + 0
    assert JOINT.combine(question, [True, 2, 59.0]) == 17
    with pytest.raises(ValueError, match=r"part .h.: answer must be a number from 0\.0 to 60"):
        JOINT.parse_answer("yes,IT,-1", question)


def test_olh_does_not_answer_joint_questions() -> None:
    with pytest.raises(ValueError, match="unknown kind 'olh' of a joint question; expected one "
                       "of: auto, grr, oue"):  # fmt: skip
        joint("olh")
