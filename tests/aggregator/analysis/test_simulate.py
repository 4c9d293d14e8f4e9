"""Simulation: reproducible, honest figures, and variance/coverage that match theory."""

from __future__ import annotations

import math

import pytest

from deniable.aggregator import exact_coverage, simulate_binary
from deniable.shared import RandomizedResponse


def test_seeded_simulation_is_reproducible_and_complete() -> None:
    spec = RandomizedResponse(0.5)
    first = simulate_binary(2000, 0.3, spec, repeats=5, seed=11)
    again = simulate_binary(2000, 0.3, spec, repeats=5, seed=11)
    assert first.first == again.first
    assert first.mean_estimate_raw == again.mean_estimate_raw
    assert first.randomness == "seeded-pcg64"
    assert first.std_theory == math.sqrt(spec.estimator_variance(0.3, 2000))
    assert first.coverage_exact == exact_coverage(2000, 0.3, 0.5)
    data = first.to_dict()
    assert data["estimate"]["n"] == 2000
    assert "first" not in data


def test_unseeded_simulation_uses_the_os_csprng() -> None:
    result = simulate_binary(1000, 0.5, RandomizedResponse(0.5))
    assert result.randomness == "os-csprng"
    assert result.seed is None
    assert result.coverage is None
    assert result.std_estimate_raw is None


def test_progress_is_reported_once_per_repeat() -> None:
    ticks: list[int] = []
    simulate_binary(100, 0.5, RandomizedResponse(0.5), repeats=7, seed=1, progress=ticks.append)
    assert ticks == [1] * 7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"participants": 0}, "participants must be >= 1, got 0"),
        ({"repeats": 0}, "repeats must be >= 1, got 0"),
        ({"p": 1.5}, r"p must be in \[0, 1\], got 1.5"),
        ({"confidence": 2.0}, "confidence must be strictly between 0 and 1, got 2.0"),
        ({"method": "bootstrap"}, "unknown method 'bootstrap'"),
    ],
)
def test_invalid_simulation_input_is_rejected(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"participants": 100, "p": 0.3} | kwargs
    with pytest.raises(ValueError, match=message):
        simulate_binary(spec=RandomizedResponse(0.5), **arguments)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [20261121, None])
def test_estimate_variance_and_coverage_match_theory(seed: int | None) -> None:
    # R repeats of n = 1000: p_hat is close to normal, so the sample variance s² satisfies
    # Var(s²/σ²) ≈ 2/(R−1); the mean has SE σ/√R; coverage has SE √(c(1−c)/R).
    # Each check allows 4 standard errors (a false alarm about once in 16,000 checks).
    # seed=None exercises the CSPRNG path.
    n, p, repeats = 1000, 0.3, 4000
    spec = RandomizedResponse(0.5)
    result = simulate_binary(n, p, spec, repeats=repeats, seed=seed)
    assert result.std_estimate_raw is not None
    assert result.coverage is not None
    sigma = result.std_theory
    ratio = (result.std_estimate_raw / sigma) ** 2
    assert abs(ratio - 1) <= 4 * math.sqrt(2 / (repeats - 1))
    assert abs(result.mean_estimate_raw - p) <= 4 * sigma / math.sqrt(repeats)
    c = result.coverage_exact
    assert abs(result.coverage - c) <= 4 * math.sqrt(c * (1 - c) / repeats)


def test_grpc_simulation_reads_back_exactly_the_in_process_estimate() -> None:
    from deniable.aggregator.analysis.simulation._grpc import grpc_submitter

    spec = RandomizedResponse(0.5)
    local = simulate_binary(3000, 0.3, spec, repeats=2, seed=5)
    with grpc_submitter(spec, confidence=0.95, method="clopper-pearson", batch_size=700) as submit:
        remote = simulate_binary(3000, 0.3, spec, repeats=2, seed=5, submit=submit)
        assert submit.reports_sent == 6000
        assert len(submit.surveys) == 2
        survey = submit.client.get_survey(submit.surveys[0])
        assert survey.reports == 3000
    assert remote.transport == "grpc"
    assert local.transport == "inprocess"
    assert remote.first == local.first  # same seed: same reports, same estimate
    assert remote.mean_estimate_raw == local.mean_estimate_raw


def test_a_report_lost_on_the_way_is_detected() -> None:
    from deniable.aggregator.analysis.simulation._grpc import grpc_submitter

    spec = RandomizedResponse(0.5)
    with (
        grpc_submitter(spec, confidence=0.95, method="clopper-pearson") as submit,
        pytest.raises(RuntimeError, match="disagrees with the 500 reports sent: n=499"),
    ):
        simulate_binary(500, 0.3, spec, seed=1, submit=lambda reports: submit(reports[1:]))


def test_grpc_submitter_validates_its_options() -> None:
    from deniable.aggregator.analysis.simulation._grpc import grpc_submitter

    spec = RandomizedResponse(0.5)
    with (
        pytest.raises(ValueError, match=r"batch_size must be in 1\.\.10000, got 0"),
        grpc_submitter(spec, confidence=0.95, method="wald", batch_size=0),
    ):
        pass
    with (
        pytest.raises(ValueError, match="needs the admin token"),
        grpc_submitter(spec, confidence=0.95, method="wald", server="127.0.0.1:1"),
    ):
        pass
