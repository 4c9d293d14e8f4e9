"""The interface every local mechanism implements: privacy map, perturbation, wire, estimate."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike

from deniable.shared._exact import exp_at_least, tightest_epsilon
from deniable.shared._validate import as_real
from deniable.shared.mechanisms._tally import Tally, add_sums
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["Estimate", "Mechanism", "ReportValueError", "Tally", "add_sums"]


class ReportValueError(ValueError):
    """A report value outside the mechanism's output domain: which row, which field, why."""

    def __init__(self, row: int, field: str, message: str) -> None:
        super().__init__(f"row {row}: {field}: {message}")
        self.row = row
        self.field = field
        self.message = message


class Estimate(Protocol):
    """What a mechanism's estimator returns: frozen, with the wire contract's field names."""

    @property
    def n(self) -> int:
        """The number of reports the estimate is from."""
        ...  # pragma: no cover

    def wire_fields(self, question: pb.Question) -> dict[str, Any]:
        """The ``Estimate`` message's fields (``options`` for a vector of shares).

        Everything but the survey, question and mechanism names, which the caller adds.
        """
        ...  # pragma: no cover

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (apart from non-finite floats)."""
        ...  # pragma: no cover


class Mechanism(ABC):
    """A local randomizer for one question type, validated once, with its exact privacy map.

    Subclasses are frozen dataclasses whose fields are the mechanism's parameters, checked
    at construction. A mechanism knows everything both sides need about itself:

    - privacy: the worst-case likelihood ratio as an exact rational, ε rounded up to a
      float (never understated), δ (0: every mechanism here is pure ε-LDP against the
      operator who sees the reports), and a plain-language explanation for participants;
    - the participant's side: :meth:`perturb` randomizes true answers with the OS CSPRNG
      (a seeded generator only in simulations and tests) and :meth:`encode` turns reports
      into the wire's ``Report.value``;
    - the aggregator's side: :meth:`decode` validates a column of received values,
      :meth:`tally` reduces reports to integer sums that merge by addition, and
      :meth:`estimate` turns a tally into an estimate with intervals;
    - planning: :meth:`estimate_variance`, the variance of the estimate from n participants.

    Class attributes: ``name`` (the registry key; for a built-in mechanism also its field
    in the wire's ``Mechanism`` oneof, else carried in ``RegisteredMechanism.name``),
    ``question_type`` (``binary``, ``categorical`` or ``numeric``: the ``Question`` kind it
    answers) and ``value_field`` (the ``Report.value`` field its reports use).
    """

    name: ClassVar[str]
    title: ClassVar[str] = ""
    """A short human name, e.g. "optimized unary encoding" (default: the name)."""
    question_type: ClassVar[str]
    also_answers: ClassVar[tuple[str, ...]] = ()
    """Other ``Question`` kinds it answers, whose domain :meth:`from_question` reads (a
    frequency oracle also answers joint questions, on their product domain)."""
    value_field: ClassVar[str]
    value_fields: ClassVar[tuple[str, ...]] = ()
    """The ``Report.value`` fields its reports are read from, the one :meth:`encode` sends
    first; empty: ``value_field`` only. A mechanism whose wire encoding changed lists the
    older fields too, which older clients still send."""

    epsilon: float
    """Exact ε = ln(privacy_ratio), rounded up to the next float; inf without privacy.

    Set once at construction (:meth:`_set_epsilon`), or a parameter of its own where the
    ratio is e^ε exactly (local Laplace).
    """

    # --- privacy --------------------------------------------------------------------------

    @property
    @abstractmethod
    def privacy_ratio(self) -> Fraction | None:
        """Max of P(y | x)/P(y | x') over reports and answers, exactly; None if unbounded."""

    def _set_epsilon(self) -> None:
        """Compute ε from the validated parameters (called by ``__post_init__``).

        Stored in the instance's ``__dict__`` directly: frozen dataclasses refuse attribute
        assignment, and a subclass may still define ``epsilon`` as a property.
        """
        self.__dict__["epsilon"] = tightest_epsilon(self.privacy_ratio)

    @property
    def delta(self) -> float:
        """δ of the (ε, δ) guarantee: 0, pure ε-local differential privacy."""
        return 0.0

    @property
    def is_private(self) -> bool:
        """False only when the privacy ratio is unbounded (ε = inf)."""
        return self.privacy_ratio is not None

    def certifies(self, epsilon: float) -> bool:
        """Whether the mechanism is ε-LDP for this ``epsilon``, decided exactly."""
        return exp_at_least(as_real("epsilon", epsilon), self.privacy_ratio)

    @abstractmethod
    def explain(self) -> str:
        """One plain-language sentence for participants about what their report reveals."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The parameters and privacy figures, JSON-ready, with ``mechanism`` its name."""

    # --- wire -----------------------------------------------------------------------------

    @abstractmethod
    def parameters(self) -> dict[str, float]:
        """The mechanism's own parameters as carried on the wire (fields, or named numbers)."""

    @classmethod
    @abstractmethod
    def from_question(cls, question: pb.Question) -> Mechanism:
        """The mechanism a question carries (its domain and parameters), validated.

        Raises:
            ValueError: a parameter is invalid; the message starts with its name.
        """

    def to_message(self) -> pb.Mechanism:
        """The wire form: the built-in message of that name, or a ``RegisteredMechanism``."""
        if self.name in pb.Mechanism.DESCRIPTOR.fields_by_name:
            field = pb.Mechanism.DESCRIPTOR.fields_by_name[self.name]
            assert field.message_type is not None  # every Mechanism.kind field is a message
            message = getattr(pb, field.message_type.name)(**self.parameters())
            return pb.Mechanism(**{self.name: message})
        return pb.Mechanism(
            registered=pb.RegisteredMechanism(name=self.name, parameters=self.parameters())
        )

    # --- the participant's side -----------------------------------------------------------

    @abstractmethod
    def perturb_many(self, truths: ArrayLike, rng: np.random.Generator | None = None) -> Any:
        """Randomized reports for an array of true answers (OS CSPRNG unless ``rng``).

        Each mechanism also has ``perturb`` for one answer. The reports' form is the
        mechanism's own (booleans, option indices, bit rows, hashed triples, numbers); it
        is the form :meth:`encode` and :meth:`tally` take.

        Raises:
            ValueError, TypeError: a true answer outside the question's domain (named).
        """

    @abstractmethod
    def encode(self, reports: Any) -> list[dict[str, Any]]:
        """Each report as ``Report`` keyword arguments: ``{value_field: value}``."""

    @property
    def accepted_fields(self) -> tuple[str, ...]:
        """The ``Report.value`` fields its reports may carry (``value_fields``, else one)."""
        return self.value_fields or (self.value_field,)

    def value_of(self, report: pb.Report) -> Any:
        """A report's value, from whichever of :attr:`accepted_fields` it carries."""
        field = report.WhichOneof("value")
        return getattr(report, field if field in self.accepted_fields else self.value_field)

    def show_value(self, report: pb.Report) -> str:
        """A report's randomized value in words, for the participant's review."""
        value = self.value_of(report)
        return value.hex() if isinstance(value, bytes) else repr(value)

    def summary_value(self, report: pb.Report) -> Any:
        """A report's randomized value for JSON output (bytes as hex)."""
        value = self.value_of(report)
        return value.hex() if isinstance(value, bytes) else value

    # --- the aggregator's side ------------------------------------------------------------

    @abstractmethod
    def decode(self, values: Any) -> Any:
        """Validate a column of received values (the decoder's form for ``value_field``).

        Returns the reports in the form :meth:`tally` takes, indexable by a row mask.

        Raises:
            ReportValueError: the first value outside the mechanism's output domain.
        """

    def read(self, value_field: str | None, values: Any) -> Any:
        """Decode a group of received reports that carry ``value_field`` (:meth:`decode`).

        ``value_field`` is one of :attr:`accepted_fields`; the decoder gives every field
        of one mechanism the same column form, and errors name the field received.

        Raises:
            ReportValueError: the reports carry another value field (row 0), or a value is
                outside the output domain.
        """
        if value_field not in self.accepted_fields:
            field, carried = self.value_field, " or ".join(self.accepted_fields)
            raise ReportValueError(0, field, f"missing ({self.name} reports carry {carried})")
        try:
            return self.decode(values)
        except ReportValueError as error:
            if value_field == self.value_field or error.field != self.value_field:
                raise
            raise ReportValueError(error.row, value_field, error.message) from None

    def join(self, parts: Sequence[Any]) -> Any | None:
        """Several groups of decoded reports (:meth:`decode`) as one, or None if it cannot.

        The aggregator tallies the reports of every batch a commit takes in one call:
        ``tally(join(parts))`` must equal the sum of each part's ``tally``. The default
        joins arrays along their first axis (one row per report); a mechanism whose
        reports are in another form joins them itself, or returns None (each part is then
        tallied on its own).
        """
        if not all(isinstance(part, np.ndarray) for part in parts):
            return None
        if len({part.shape[1:] for part in parts}) != 1:
            return None
        return np.concatenate(parts)

    @abstractmethod
    def tally(self, reports: Any) -> list[int]:
        """What these reports add to the question's running sums (exact integers)."""

    @abstractmethod
    def estimate(
        self,
        tally: Tally,
        confidence: float = 0.95,
        method: str = "clopper-pearson",
        *,
        simultaneous: bool = False,
        anytime: bool = False,
    ) -> Estimate:
        """The estimate, with its interval, from a tally of at least one report.

        ``simultaneous``: intervals that cover every component at once (several options)
        with the stated confidence. ``anytime``: a confidence sequence, valid at every
        number of reports at which it is looked at. The estimate's ``coverage`` says which.
        """

    # --- planning -------------------------------------------------------------------------

    @abstractmethod
    def estimate_variance(self, n: int, share: float | None = None) -> float:
        """Variance of the estimate from n i.i.d. participants (population estimand).

        For shares, at a true share ``share`` or the worst share when None; for means,
        the worst distribution on the range (``share`` does not apply).
        """

    def margin(self, n: int, confidence: float, share: float | None = None) -> float:
        """Normal-approximation half-width z·sqrt(estimate_variance(n))."""
        from deniable.shared.stats import normal_quantile

        return normal_quantile(confidence) * math.sqrt(self.estimate_variance(n, share))
