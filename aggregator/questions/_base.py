"""The aggregator's side of a question type: what it plans, simulates and how its estimates read."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from deniable.aggregator.analysis.publishing import QuestionSampler
from deniable.aggregator.analysis.simulation import Accuracy, aggregator_connection
from deniable.shared.mechanisms import Mechanism
from deniable.shared.questions import QuestionType, question_type, question_types
from deniable.shared.transport import TlsConfig
from deniable.shared.wire.v1 import aggregator_pb2 as pb

if TYPE_CHECKING:
    from deniable.client import AggregatorClient

__all__ = [
    "Emit",
    "Outcome",
    "PlanRequest",
    "QuestionAnalysis",
    "Simulation",
    "SimulationRequest",
    "Transport",
    "analyses",
    "analysis_for",
    "interval_fields",
    "register_analysis",
]

Emit = Callable[[str], None]
"""Writes one line of a command's text output."""


@dataclass(frozen=True)
class Outcome:
    """What a plan or a simulation gives: its ``--json`` document and its text.

    ``result`` is the analysis object itself (a plan's curves are drawn from it).
    """

    document: dict[str, Any]
    show: Callable[[Emit], None]
    result: Any = None


@dataclass(frozen=True)
class PlanRequest:
    """What ``plan`` asks: exactly one of ``margin`` or ``participants``, and assumptions."""

    margin: float | None
    participants: int | None
    confidence: float = 0.95
    share: float | None = None
    distribution: str | None = None
    mechanism: str = "auto"
    """The mechanism asked for (``auto`` or a name): plans compare it with the others."""
    epsilon: float | None = None
    """The ε asked for (None when asked by ``alpha``)."""
    alpha: float | None = None


@dataclass(frozen=True)
class SimulationRequest:
    """What ``simulate`` asks: the population (``share`` or ``distribution``) and the runs."""

    participants: int
    share: float | None = None
    distribution: str | None = None
    repeats: int = 1
    confidence: float = 0.95
    method: str = "clopper-pearson"
    seed: int | None = None


@dataclass
class Transport:
    """Where simulated reports go: a daemon over gRPC (``grpc``) or nowhere (in process).

    Connections are entered on ``stack``; ``sent`` advances per batch sent, ``repeated``
    per repeat done (progress bars, or nothing).
    """

    stack: ExitStack
    grpc: bool = False
    server: str | None = None
    admin_token: str | None = None
    batch_size: int = 1000
    tls: TlsConfig | None = None
    sent: Callable[[int], None] = field(default=lambda _count: None)
    repeated: Callable[[int], None] = field(default=lambda _count: None)

    def submitting(self, confidence: float) -> dict[str, Any]:
        """The keyword arguments of a submitter over this transport (at ``confidence``)."""
        return {
            "confidence": confidence, "server": self.server, "admin_token": self.admin_token,
            "batch_size": self.batch_size, "tls": self.tls, "progress": self.sent,
        }  # fmt: skip

    def connect(self) -> tuple[AggregatorClient, str]:
        """A connection to the daemon (an embedded one without ``server``), closed with the stack.

        Returns the client and the daemon's address.
        """
        return self.stack.enter_context(
            aggregator_connection(self.server, self.admin_token, self.batch_size, self.tls)
        )


class Simulation(ABC):
    """A simulation whose inputs are checked, ready to run (:meth:`QuestionAnalysis.simulation`)."""

    @abstractmethod
    def run(self, transport: Transport) -> Outcome:
        """Draw the population, randomize, estimate (over ``transport``) and describe it."""


class QuestionAnalysis(ABC):
    """What differs between question types on the aggregator's side.

    One instance per type, registered under ``kind`` (the shared
    :class:`~deniable.shared.questions.QuestionType` it serves, a ``Question.kind`` field):
    what ``plan`` computes, what ``simulate`` draws as truth and measures, and how an
    estimate of the type reads in ``estimate``'s text and JSON. Commands reach a type only
    through :func:`analysis_for`, never by its name.
    """

    kind: ClassVar[str]
    plan_inputs: ClassVar[frozenset[str]] = frozenset()
    """``plan`` options besides the question's own that apply (``share``, ``distribution``)."""
    simulate_inputs: ClassVar[frozenset[str]] = frozenset({"distribution", "method"})
    """``simulate`` options besides the question's own that apply (``share``,
    ``distribution``, ``method``: the interval method asked of the estimates)."""

    sweeps: ClassVar[bool] = False
    """Whether ``simulate --epsilons`` sweeps it (then :meth:`accuracy` is implemented)."""
    compares_central: ClassVar[bool] = False
    """Whether ``simulate --compare-central`` compares it with a curator's central count."""
    sweep_note: ClassVar[str] = ""
    """How a sweep's RMSE is taken, when not of the one estimate (e.g. over options)."""

    @property
    def question_type(self) -> QuestionType:
        """The shared question type this serves."""
        return question_type(self.kind)

    @abstractmethod
    def plan(self, question: pb.Question, mechanism: Mechanism, request: PlanRequest) -> Outcome:
        """Participants for a margin (or the margin for participants) of ``question``.

        Raises:
            ValueError: an input the plan cannot use (named).
        """

    @abstractmethod
    def simulation(
        self, question: pb.Question, mechanism: Mechanism, request: SimulationRequest
    ) -> Simulation:
        """A simulation of ``question``, its inputs checked before anything runs.

        Raises:
            ValueError: a missing or invalid input (named, as the command line spells it).
        """

    def accuracy(self, result: Any) -> Accuracy:
        """A simulation's RMSE, mean interval width and coverage, for a sweep over ε.

        Raises:
            ValueError: the type is not swept (see :attr:`sweeps`).
        """
        raise ValueError(f"a {self.kind} question is not swept over epsilon")

    @abstractmethod
    def sampler(self, question: pb.Question, estimate: pb.Estimate) -> QuestionSampler:
        """How ``synthesize`` samples the question's columns from its released estimate.

        Raises:
            ValueError: the estimate does not fit the question (named).
        """

    @abstractmethod
    def chart(self, question: pb.Question, data: dict[str, Any]) -> str:
        """Draw an estimate for the report (``data``: its ``--json`` form), as HTML.

        Every string from the survey is escaped; the page allows no script.
        """

    def quantities(self, estimate: pb.Estimate) -> Iterator[dict[str, Any]]:
        """Each estimated quantity as an ``export`` row: ``quantity``, ``label``, its figures.

        By default one, ``estimate`` (a share or a mean). A row may name its own interval
        ``method`` and ``coverage`` when they differ from the estimate's.
        """
        yield {"quantity": "estimate", "label": None, **interval_fields(estimate)}

    def estimate_fields(self, estimate: pb.Estimate, data: dict[str, Any]) -> None:  # noqa: B027
        """Add this type's own ``--json`` fields of an estimate to ``data`` (default: none)."""

    @abstractmethod
    def estimate_lines(self, row: dict[str, Any], emit: Emit) -> None:
        """The estimate's rows in ``estimate``'s table (``row``: its ``--json`` form)."""

    def note_lines(self, row: dict[str, Any], emit: Emit) -> None:  # noqa: B027
        """Notes of this type under the table (default: none)."""


def interval_fields(value: Any) -> dict[str, Any]:
    """An estimate's (or an option's, item's, pair's) figures as ``export`` rows name them."""
    fields = ("estimate", "estimate_raw", "ci_low", "ci_high", "std_error")
    row = {field: getattr(value, field) for field in fields}
    if hasattr(value, "support"):
        row["support"] = value.support
    return row


_ANALYSES: dict[str, QuestionAnalysis] = {}


def register_analysis(analysis: QuestionAnalysis) -> QuestionAnalysis:
    """Register the aggregator's side of a question type (replacing any of that kind).

    Raises:
        ValueError: no shared question type of that kind is registered.
    """
    if analysis.kind not in question_types():
        raise ValueError(f"no question type {analysis.kind!r} to analyse; register it first")
    _ANALYSES[analysis.kind] = analysis
    return analysis


def analysis_for(question: pb.Question | str) -> QuestionAnalysis:
    """The registered analysis of a question (or of a kind, by name).

    Raises:
        ValueError: a question without a kind, or a kind with no analysis registered.
    """
    kind = question if isinstance(question, str) else question.WhichOneof("kind")
    if kind is None:
        raise ValueError("the question has no kind")
    try:
        return _ANALYSES[kind]
    except KeyError:
        raise ValueError(
            f"no analysis of {kind!r} questions; known: {', '.join(_ANALYSES)}"
        ) from None


def analyses() -> dict[str, QuestionAnalysis]:
    """Every registered analysis by kind, in registration order."""
    return dict(_ANALYSES)
