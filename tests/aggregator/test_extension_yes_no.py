"""A yes/no mechanism defined only here is planned and simulated like randomized response.

Warner's design (Warner, JASA 1965): a spinner asks "are you in the group?" with
probability w and "are you not in the group?" otherwise, so the answer given is the truth
with probability w. It needs no change to any module of the package: it declares the
yes/no channel's rates (P(yes | yes) = w, P(yes | no) = 1 − w), registers for yes/no
questions, and ``plan`` and ``simulate`` reach it by ``--mechanism``. Its channel at ε is
randomized response's at ε (both keep the truth with probability e^ε/(1 + e^ε)), which
the plans below pin exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner
from numpy.typing import ArrayLike, NDArray

from deniable.aggregator.cli import cli
from deniable.shared.mechanisms import (
    Mechanism,
    ProportionEstimate,
    Tally,
    estimate_proportion,
    register,
    registered,
    unregister,
)
from deniable.shared.sampling import bernoulli, source_for
from deniable.shared.wire.v1 import aggregator_pb2 as pb


@dataclass(frozen=True)
class WarnerDesign(Mechanism):
    """The truth with probability w (the direct question), its negation otherwise."""

    name: ClassVar[str] = "warner_test"
    title: ClassVar[str] = "Warner's design"
    question_type: ClassVar[str] = "binary"
    value_field: ClassVar[str] = "encoded"

    w: float

    def __post_init__(self) -> None:
        if not 0.5 < self.w <= 1.0:
            raise ValueError(f"w must be in (1/2, 1], got {self.w!r}")
        self._set_epsilon()

    @classmethod
    def from_epsilon(cls, epsilon: float) -> WarnerDesign:
        w = math.exp(epsilon) / (1.0 + math.exp(epsilon))
        while not cls(w).certifies(epsilon):
            w = math.nextafter(w, 0.5)
        return cls(w)

    @classmethod
    def from_question(cls, question: pb.Question) -> WarnerDesign:
        return cls(question.mechanism.registered.parameters["w"])

    @property
    def p_star_exact(self) -> Fraction:
        return Fraction(self.w)

    @property
    def q_star_exact(self) -> Fraction:
        return 1 - Fraction(self.w)

    @property
    def privacy_ratio(self) -> Fraction | None:
        return None if self.w == 1.0 else self.p_star_exact / self.q_star_exact

    def explain(self) -> str:
        return f"A spinner flips your answer with probability {1 - self.w:.2f}."

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.name, "w": self.w, "epsilon": self.epsilon}

    def parameters(self) -> dict[str, float]:
        return {"w": self.w}

    def perturb_many(self, truths: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        truth = np.asarray(truths, dtype=bool)
        direct = bernoulli(self.p_star_exact, truth.size, source_for(rng)).reshape(truth.shape)
        return np.equal(truth, direct)

    def encode(self, reports: Any) -> list[dict[str, Any]]:
        return [{"encoded": bytes([bit])} for bit in np.asarray(reports, dtype=np.uint8).ravel()]

    def decode(self, values: Any) -> NDArray[np.bool_]:
        return np.array([value == b"\x01" for value in values], dtype=bool)

    def tally(self, reports: Any) -> list[int]:
        return [int(np.count_nonzero(reports))]

    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> ProportionEstimate:
        return estimate_proportion(tally.ones, tally.n, 2 * self.w - 1, confidence, method)

    def estimate_variance(self, n: int, share: float | None = None) -> float:
        p = 0.5 if share is None else share
        report = self.w * p + (1 - self.w) * (1 - p)
        return report * (1 - report) / ((2 * self.w - 1) ** 2 * n)


@pytest.fixture
def warner() -> Iterator[type[WarnerDesign]]:
    register(WarnerDesign)
    yield WarnerDesign
    unregister(WarnerDesign.name)
    assert WarnerDesign.name not in registered()


def run(*args: str) -> Any:
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


@pytest.mark.parametrize("epsilon", ["0.5", "2"])
def test_plan_takes_the_new_yes_no_mechanism(warner: type[WarnerDesign], epsilon: str) -> None:
    planned = run("plan", "--mechanism", "warner_test", "--epsilon", epsilon, "--margin", "0.03",
                  "--json")  # fmt: skip
    assert planned["alpha"] is None  # the design has no α parameter of its own
    assert planned["epsilon"] == warner.from_epsilon(float(epsilon)).epsilon
    # The same channel as randomized response at that ε: the same participants, exactly.
    rr = run("plan", "--epsilon", epsilon, "--margin", "0.03", "--json")
    assert planned["participants"] == rr["participants"]
    text = CliRunner().invoke(cli, ["plan", "--mechanism", "warner_test", "--epsilon", epsilon,
                                    "--margin", "0.03"])  # fmt: skip
    assert "Mechanism: warner_test (Warner's design)" in text.stdout


def test_simulate_runs_the_new_mechanism_and_its_intervals_cover(
    warner: type[WarnerDesign],
) -> None:
    result = run(
        "simulate", "--mechanism", "warner_test", "--epsilon", "1", "--p", "0.3",
        "--participants", "2000", "--repeats", "400", "--seed", "7", "--transport", "inprocess",
        "--json",
    )  # fmt: skip
    w = warner.from_epsilon(1.0).w
    assert result["estimate"]["alpha"] == 2 * w - 1
    # 400 Clopper-Pearson intervals at 95%: coverage within 4 Monte Carlo standard errors.
    assert abs(result["coverage"] - result["coverage_exact"]) < 4 * math.sqrt(0.95 * 0.05 / 400)
    assert result["coverage_exact"] >= 0.95
    assert abs(result["mean_estimate_raw"] - 0.3) < 4 * result["std_theory"] / math.sqrt(400)
