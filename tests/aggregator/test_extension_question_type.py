"""A question type defined only here runs through plan, simulate and estimate unchanged.

A star rating (1 to K stars) travels as a multiple-choice question on the wire (it reuses
the ``categorical`` kind and its mechanisms), but reads as a rating: its spec says
``stars``, its plan and simulation speak of stars and the mean rating, and ``estimate``
shows the mean rating beside the shares. Registering its two halves, the shared question
type and the aggregator's analysis, is all it takes: no module of the package changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np
import pytest
from click.testing import CliRunner

from deniable.aggregator.analysis.publishing._report_svg import interval_chart, intervals
from deniable.aggregator.analysis.publishing._synthesize import QuestionSampler, single_column
from deniable.aggregator.analysis.simulation._categorical import simulate_categorical
from deniable.aggregator.analysis.simulation._distributions import check_shares, parse_shares
from deniable.aggregator.cli import cli
from deniable.aggregator.questions import (
    Emit,
    Outcome,
    PlanRequest,
    QuestionAnalysis,
    Simulation,
    SimulationRequest,
    Transport,
    analysis_for,
    register_analysis,
)
from deniable.aggregator.questions._planning import compared_plan
from deniable.aggregator.server import start_server
from deniable.aggregator.storage import open_storage
from deniable.client import AggregatorClient
from deniable.shared.mechanisms import FrequencyOracle, Mechanism, mechanism_of
from deniable.shared.questions import CATEGORICAL, question_type, register_question_type
from deniable.shared.questions.categorical import Categorical
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import ADMIN_TOKEN


class Rating(Categorical):
    """1 to ``stars`` stars, as a multiple-choice question of options ``1★`` … ``K★``."""

    label: ClassVar[str] = "a star rating"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"stars", "epsilon", "mechanism"})

    def domain(self, item: Mapping[str, Any]) -> pb.CategoricalQuestion:
        stars = item.get("stars")
        if type(stars) is not int or not 2 <= stars <= 10:
            raise ValueError(f"'stars' must be a whole number 2..10, got {stars!r}")
        return pb.CategoricalQuestion(options=[f"{n}★" for n in range(1, stars + 1)])


def mean_rating(shares: list[float]) -> float:
    return sum(n * share for n, share in enumerate(shares, 1))


class RatingAnalysis(QuestionAnalysis):
    """A rating's shares per star, and the mean rating they give."""

    kind = "categorical"
    plan_inputs = frozenset({"share"})

    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        result = compared_plan(question, request)
        document = {"type": "rating", "stars": result.k, "participants": result.participants}
        return Outcome(
            document, lambda emit: emit(f"{result.participants:,} raters for one star's share")
        )

    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        if request.distribution is None:
            raise ValueError("a rating needs --distribution (the share of each star)")
        stars = tuple(question.categorical.options)
        shares = check_shares(parse_shares(request.distribution), len(stars))
        return _RatingSimulation(cast(FrequencyOracle, mechanism), stars, shares, request)

    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        shares = np.asarray([option.estimate for option in estimate.options])
        stars = np.arange(1, shares.size + 1).astype(str)

        def draw(rng: np.random.Generator, n: int) -> list[list[str]]:
            return [stars[rng.choice(shares.size, size=n, p=shares / shares.sum())].tolist()]

        return single_column(question, "a rating: stars drawn with the estimated shares", draw)

    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        rows = intervals(data["options"])
        return interval_chart(rows, 0.0, 1.0, title=f"{question.id}: stars", bars=True)

    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        shares = [option["estimate"] for option in row["options"]]
        emit(f"{row['question_id']}: mean rating {mean_rating(shares):.2f} from {row['n']} raters")


class _RatingSimulation(Simulation):
    def __init__(
        self,
        oracle: FrequencyOracle,
        stars: tuple[str, ...],
        shares: tuple[float, ...],
        request: SimulationRequest,
    ) -> None:
        self.oracle, self.stars, self.shares, self.request = oracle, stars, shares, request

    def run(self, transport: Transport) -> Outcome:
        assert not transport.grpc  # this test simulates in process
        request = self.request
        result = simulate_categorical(
            request.participants, self.shares, self.oracle, options=self.stars,
            repeats=request.repeats, seed=request.seed,
        )  # fmt: skip
        estimated = mean_rating(list(result.first.estimate))
        document = {
            "type": "rating",
            "mean_rating": {"true": mean_rating(list(self.shares)), "estimated": estimated},
        }
        return Outcome(document, lambda emit: emit(f"mean rating {estimated:.2f}"))


@pytest.fixture
def rating() -> Iterator[RatingAnalysis]:
    shipped = analysis_for("categorical")
    register_question_type(Rating())
    analysis = RatingAnalysis()
    register_analysis(analysis)
    yield analysis
    register_question_type(CATEGORICAL)
    register_analysis(shipped)
    assert question_type("categorical") is CATEGORICAL


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "rating.json"
    question = {"id": "stars", "text": "How many stars?", "type": "categorical", "stars": 5}
    path.write_text(json.dumps({"title": "Rate us", "questions": [{**question, "epsilon": 2.0}]}))
    return path


def run(*args: str) -> Any:
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_plan_and_simulate_take_the_new_type_from_its_spec(
    rating: RatingAnalysis, spec: Path
) -> None:
    planned = run("plan", "--spec", str(spec), "--margin", "0.05", "--json")
    assert planned["type"] == "rating"
    assert planned["stars"] == 5
    assert planned["participants"] > 0
    simulated = run(
        "simulate", "--spec", str(spec), "--participants", "20000", "--distribution",
        "0.1,0.1,0.2,0.3,0.3", "--transport", "inprocess", "--seed", "5", "--json",
    )  # fmt: skip
    mean = simulated["mean_rating"]
    assert mean["true"] == pytest.approx(3.6)
    # The mean of 1..5 stars from 20,000 GRR reports at ε = 2: its std error is under 0.05.
    assert abs(mean["estimated"] - mean["true"]) < 0.25


def test_estimate_shows_the_mean_rating_from_a_daemon(
    rating: RatingAnalysis, spec: Path, tmp_path: Path
) -> None:
    running = start_server(
        open_storage(f"sqlite:///{tmp_path / 'r.db'}"), ADMIN_TOKEN, "127.0.0.1:0"
    )
    try:
        survey = run(
            "survey", "create", str(spec), "--server", running.address, "--admin-token-file",
            str(_token(tmp_path)), "--json",
        )  # fmt: skip
        question = pb.Question(
            categorical=pb.CategoricalQuestion(
                options=survey["questions"][0]["categorical"]["options"]
            )
        )
        assert question.categorical.options == ["1★", "2★", "3★", "4★", "5★"]
        with AggregatorClient(running.address, attempts=1) as client:
            stored = client.get_survey(survey["id"]).questions[0]
            mechanism = mechanism_of(stored)
            values = mechanism.encode(mechanism.perturb_many([4] * 300 + [0] * 100))
            client.submit_reports(
                [
                    pb.Report(report_id=f"r{i}", survey_id=survey["id"], question_id="stars",
                              mechanism=stored.mechanism, **value)
                    for i, value in enumerate(values)
                ]
            )  # fmt: skip
        done = CliRunner().invoke(cli, ["estimate", survey["id"], "--server", running.address])
    finally:
        running.stop(grace=1.0)
    assert done.exit_code == 0, done.output
    assert "stars: mean rating " in done.stdout
    assert "from 400 raters" in done.stdout


def _token(tmp_path: Path) -> Path:
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN)
    return path
