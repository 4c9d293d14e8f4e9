"""A joint question's marginals and associations, from its cross-tab's cell estimates."""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import NDArray

from deniable.shared.mechanisms import FrequencyOracle
from deniable.shared.stats import normal_quantile
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["JOINT_COVERAGE", "association_values", "complete_joint_estimate"]

JOINT_COVERAGE = (
    "marginals: sums of the cross-tab's cells, Wald intervals from the covariance of the "
    "cell estimates (delta method, {scope}); covariance and correlation: delta-method "
    "Wald intervals from the same covariance, scores yes=1/no=0 and bin midpoints"
)


def complete_joint_estimate(
    question: pb.Question,
    mechanism: FrequencyOracle,
    estimate: pb.Estimate,
    names: list[str],
    values: list[list[str]],
    scores: list[list[float] | None],
    *,
    simultaneous: bool = False,
) -> None:
    """Name the cells, and add each part's marginal and every scored pair's association.

    With f̃ the projected cell shares, Σ the covariance of the raw cell estimates at f̃
    (:meth:`FrequencyOracle.covariance_unchecked`) and P = I − 11ᵀ/k, the projection's
    covariance is PΣP (the projection shifts every cell by the same amount where none is
    clipped at 0), written Σ below. A marginal share is aᵀf̃ with
    standard error √(aᵀΣa) (a: the indicator of its cells); a covariance or correlation
    g(f̃) has standard error √(∇gᵀΣ∇g). Intervals are estimate ± z·SE, z the normal
    quantile at the confidence (Bonferroni over every marginal value when
    ``simultaneous``); marginal intervals are clipped to [0, 1] and widened to contain the
    estimate, correlations clipped to [−1, 1].
    """
    for option, name in zip(estimate.options, names, strict=True):
        option.option = name
    n = int(estimate.n)
    shares = np.array([option.estimate for option in estimate.options], dtype=np.float64)
    raw = np.array([option.estimate_raw for option in estimate.options], dtype=np.float64)
    support = np.array([option.support for option in estimate.options], dtype=np.int64)
    sizes = [len(v) for v in values]
    # The projected estimate is f̂ − (1ᵀf̂ − 1)/k where no cell is clipped at 0: linear, so
    # its covariance is PΣP with P = I − 11ᵀ/k (GRR's raw cells already sum to 1: PΣP = Σ).
    center = np.eye(len(shares)) - 1.0 / len(shares)
    cov = center @ mechanism.covariance_unchecked(shares, n) @ center
    # index[j][c]: the value of part j in cell c (row-major, the first part slowest)
    index = [grid.reshape(-1) for grid in np.indices(sizes)]
    total = sum(sizes)
    level = 1.0 - (1.0 - estimate.confidence) / total if simultaneous else estimate.confidence
    z = normal_quantile(level)
    for part, part_values, of in zip(question.joint.parts, values, index, strict=True):
        marginal = pb.MarginalEstimate(part=part.id)
        for value, label in enumerate(part_values):
            cells = (of == value).astype(np.float64)
            share = float(cells @ shares)
            error = math.sqrt(max(float(cells @ cov @ cells), 0.0))
            low = min(max(share - z * error, 0.0), share)
            high = max(min(share + z * error, 1.0), share)
            marginal.values.append(
                pb.OptionEstimate(
                    option=label,
                    estimate=share,
                    estimate_raw=float(cells @ raw),
                    ci_low=low,
                    ci_high=high,
                    std_error=error,
                    support=int(support[of == value].sum()),
                )
            )
        estimate.marginals.append(marginal)
    z_pair = normal_quantile(estimate.confidence)
    scored = [j for j, score in enumerate(scores) if score is not None]
    for a, b in itertools.combinations(scored, 2):
        score_a, score_b = scores[a], scores[b]
        assert score_a is not None
        assert score_b is not None
        x = np.asarray(score_a)[index[a]]
        y = np.asarray(score_b)[index[b]]
        estimate.associations.append(
            _association(
                question.joint.parts[a].id, question.joint.parts[b].id, x, y, shares, cov, z_pair
            )
        )
    scope = f"Bonferroni over {total} values" if simultaneous else "each value separately"
    estimate.joint_coverage = JOINT_COVERAGE.format(scope=scope) + (
        "; fixed-n, not anytime-valid" if estimate.anytime else ""
    )


def association_values(
    x: NDArray[np.float64], y: NDArray[np.float64], f: NDArray[np.float64]
) -> tuple[float, float]:
    """(covariance, correlation) of scores x, y over cells with shares f.

    The correlation is 0 when a part has one value only.
    """
    mx, my = float(f @ x), float(f @ y)
    covariance = float(f @ (x * y)) - mx * my
    vx, vy = float(f @ (x * x)) - mx * mx, float(f @ (y * y)) - my * my
    if vx <= 0.0 or vy <= 0.0:
        return covariance, 0.0
    return covariance, max(-1.0, min(1.0, covariance / math.sqrt(vx * vy)))


def _association(
    part_a: str,
    part_b: str,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    f: NDArray[np.float64],
    cov: NDArray[np.float64],
    z: float,
) -> pb.AssociationEstimate:
    """Covariance and correlation of scores x, y over cells with shares f (delta method).

    cov = Σ f xy − (Σ f x)(Σ f y), with gradient xy − x·μ_y − y·μ_x; ρ = cov/(σ_x σ_y),
    with gradient ∇cov/(σ_xσ_y) − (ρ/2)(∇σ_x²/σ_x² + ∇σ_y²/σ_y²), ∇σ_x² = x² − 2xμ_x.
    """
    mx, my = float(f @ x), float(f @ y)
    covariance = float(f @ (x * y)) - mx * my
    grad_cov = x * y - x * my - y * mx
    se_cov = math.sqrt(max(float(grad_cov @ cov @ grad_cov), 0.0))
    vx, vy = float(f @ (x * x)) - mx * mx, float(f @ (y * y)) - my * my
    result = pb.AssociationEstimate(
        part_a=part_a,
        part_b=part_b,
        covariance=covariance,
        covariance_low=covariance - z * se_cov,
        covariance_high=covariance + z * se_cov,
        covariance_std_error=se_cov,
    )
    if vx <= 0.0 or vy <= 0.0:  # a part with one value only: no correlation
        result.correlation_low, result.correlation_high = -1.0, 1.0
        return result
    rho = max(-1.0, min(1.0, covariance / math.sqrt(vx * vy)))
    grad_rho = grad_cov / math.sqrt(vx * vy) - (rho / 2.0) * (
        (x * x - 2.0 * x * mx) / vx + (y * y - 2.0 * y * my) / vy
    )
    se_rho = math.sqrt(max(float(grad_rho @ cov @ grad_rho), 0.0))
    result.correlation = rho
    result.correlation_low = max(-1.0, rho - z * se_rho)
    result.correlation_high = min(1.0, rho + z * se_rho)
    result.correlation_std_error = se_rho
    return result
