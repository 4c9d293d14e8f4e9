"""Local against central privacy at one ε: randomized response against a curator's Laplace count."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deniable.aggregator.central.curator import discrete_half_width, noise_scale
from deniable.shared._validate import as_count, check_confidence, check_unit_interval
from deniable.shared.mechanisms import RandomizedResponse, estimate_proportion
from deniable.shared.sampling import discrete_laplace, source_for

__all__ = ["ModelErrors", "ModelsCompared", "compare_local_central", "sizes_up_to"]

CENTRAL_SENSITIVITY = 1
"""A count's sensitivity: one participant added or removed moves it by at most 1."""


def sizes_up_to(participants: int) -> tuple[int, ...]:
    """``participants`` and its tenths down to 10: 2,000 gives (20, 200, 2,000)."""
    sizes = [participants]
    while sizes[-1] // 10 >= 10:
        sizes.append(sizes[-1] // 10)
    return tuple(reversed(sizes))


@dataclass(frozen=True)
class ModelErrors:
    """Both models' error on the share at one number of participants.

    The error is against the sample's own share (what either model sets out to release), so
    it is the privacy noise alone: the sampling error p(1 − p)/n is the same for both and
    left out. Estimates are unclipped (clipping to [0, 1] only lowers the error).

    Attributes:
        participants: n.
        local_rmse: root mean squared error of the randomized-response estimate.
        local_theory: its exact value, √(e^ε / n) / (e^ε − 1), whatever the answers.
        central_rmse: root mean squared error of (count + Z) / n.
        central_theory: its exact value, √(2q) / ((1 − q)·n) with q = e^(−ε).
        local_width: mean width of the local interval (the chosen method).
        central_width: width of the central interval, 2k/n (k the exact noise quantile).
    """

    participants: int
    local_rmse: float
    local_theory: float
    central_rmse: float
    central_theory: float
    local_width: float
    central_width: float

    @property
    def ratio(self) -> float:
        """How many times the local error is the central one (theory)."""
        return self.local_theory / self.central_theory


@dataclass(frozen=True)
class ModelsCompared:
    """The comparison: its settings and one row of errors per number of participants."""

    p: float
    epsilon: float
    repeats: int
    confidence: float
    method: str
    randomness: str
    seed: int | None
    rows: tuple[ModelErrors, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (each row gains its ``ratio``)."""
        data = asdict(self)
        data["rows"] = [asdict(row) | {"ratio": row.ratio} for row in self.rows]
        data["local"] = {
            "model": "randomized response on each participant's device",
            "holds_against": "the aggregator's operator and everyone after",
            "error": "shrinks like 1/sqrt(n)",
        }
        data["central"] = {
            "model": "a trusted curator holding every raw answer releases the yes-count "
            "plus discrete Laplace noise of scale 1/epsilon",
            "holds_against": "readers of the release (not the curator, who sees every answer)",
            "error": "shrinks like 1/n",
            "sensitivity": CENTRAL_SENSITIVITY,
        }
        return data


def central_theory(epsilon: float, n: int) -> float:
    """The discrete Laplace's standard deviation √(2q)/(1 − q), over n."""
    q = math.exp(-epsilon / CENTRAL_SENSITIVITY)
    return math.sqrt(2 * q) / (1 - q) / n


def compare_local_central(
    p: float,
    mechanism: RandomizedResponse,
    sizes: tuple[int, ...],
    *,
    repeats: int = 200,
    confidence: float = 0.95,
    method: str = "clopper-pearson",
    seed: int | None = None,
) -> ModelsCompared:
    """The same population through local randomized response and a central Laplace count.

    For each n and repeat, n true answers are drawn with share ``p``; locally each is
    randomized with the client's ``mechanism`` and the share estimated with its interval;
    centrally the true yes-count gets exact discrete Laplace noise of scale 1/ε at the same
    ε (the curator's count query). OS CSPRNG unless ``seed`` is given.
    """
    share = check_unit_interval("p", p)
    level = check_confidence(confidence)
    count = as_count("repeats", repeats, minimum=2)
    if not sizes:
        raise ValueError("sizes must name at least one number of participants")
    if not mechanism.is_private:
        raise ValueError("the comparison needs a finite epsilon (alpha below 1)")
    rng = None if seed is None else np.random.default_rng(seed)
    source = source_for(rng)
    draws = rng if rng is not None else np.random.default_rng()
    scale = noise_scale(mechanism.epsilon, CENTRAL_SENSITIVITY)
    rows = []
    for n in sizes:
        size = as_count("participants", n, minimum=1)
        local_err, widths = [], []
        for _ in range(count):
            truth = draws.random(size) < share
            yes = int(np.count_nonzero(truth))
            reports = int(np.count_nonzero(mechanism.perturb_many(truth, rng)))
            est = estimate_proportion(reports, size, mechanism.alpha, level, method)
            local_err.append(est.estimate_raw - yes / size)
            widths.append(est.ci_high - est.ci_low)
        central_err = discrete_laplace(scale, count, source) / size
        k = discrete_half_width(scale, level)
        rows.append(
            ModelErrors(
                participants=size,
                local_rmse=float(np.sqrt(np.mean(np.square(local_err)))),
                # given the sample: the mechanism's "respondents" variance, (1 − α²)/(4α²n)
                local_theory=math.sqrt(mechanism.estimator_variance(share, size, "respondents")),
                central_rmse=float(np.sqrt(np.mean(np.square(central_err)))),
                central_theory=central_theory(mechanism.epsilon, size),
                local_width=float(np.mean(widths)),
                central_width=min(1.0, 2 * k / size),
            )
        )
    return ModelsCompared(
        p=share, epsilon=mechanism.epsilon, repeats=count, confidence=level, method=method,
        randomness="os-csprng" if seed is None else "seeded-pcg64", seed=seed, rows=tuple(rows),
    )  # fmt: skip
