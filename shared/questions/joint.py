"""Joint questions: a few parts answered as ONE report on their product domain."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from deniable.shared.errors import shown
from deniable.shared.mechanisms import MAX_OPTIONS, FrequencyOracle, Mechanism
from deniable.shared.questions._base import (
    Answer,
    QuestionType,
    question_type,
    register_question_type,
)
from deniable.shared.questions.categorical import AUTO_PREFERENCE, CATEGORICAL
from deniable.shared.questions.numeric import MAX_NUMERIC_BOUND
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "JOINT",
    "MAX_PARTS",
    "Joint",
    "cell_names",
    "joint_truth",
    "part_questions",
    "part_values",
]

MAX_PARTS = 8
"""Most parts a joint question may have (its cells are still at most ``MAX_OPTIONS``)."""

PART_TYPES = ("binary", "categorical", "numeric")
PART_KEYS = {
    "binary": frozenset(),
    "categorical": frozenset({"options"}),
    "numeric": frozenset({"min", "max", "bins", "edges"}),
}
SCORED = frozenset({"binary", "numeric"})
"""Part kinds with a numeric score (yes/no as 0/1, a bin as its midpoint): their covariance
and correlation are estimated."""


def part_values(part: pb.JointPart) -> list[str]:
    """A part's values in index order: ``no``, ``yes``; the options; the bins ``[a, b)``."""
    kind = part.WhichOneof("kind")
    if kind == "binary":
        return ["no", "yes"]
    if kind == "categorical":
        return list(part.categorical.options)
    edges = list(part.numeric.edges)
    return [
        f"[{lo:g}, {hi:g}{']' if i == len(edges) - 2 else ')'}"
        for i, (lo, hi) in enumerate(itertools.pairwise(edges))
    ]


def part_scores(part: pb.JointPart) -> list[float] | None:
    """A part's values as numbers (yes/no 0/1, bins their midpoints); None for options."""
    kind = part.WhichOneof("kind")
    if kind == "binary":
        return [0.0, 1.0]
    if kind == "numeric":
        edges = list(part.numeric.edges)
        return [(lo + hi) / 2.0 for lo, hi in itertools.pairwise(edges)]
    return None


def cell_names(question: pb.Question) -> list[str]:
    """Every cell's name, ``part=value, part=value``, in cell order (first part slowest)."""
    names = [""]
    for part in question.joint.parts:
        names = [
            f"{name}, {part.id}={value}" if name else f"{part.id}={value}"
            for name in names
            for value in part_values(part)
        ]
    return names


def part_questions(question: pb.Question) -> list[pb.Question]:
    """Each part as a question of its own kind (a numeric part on its range), for prompts."""
    questions = []
    for part in question.joint.parts:
        item = pb.Question(id=part.id, text=part.text)
        kind = part.WhichOneof("kind")
        if kind == "binary":
            item.binary.SetInParent()
        elif kind == "categorical":
            item.categorical.CopyFrom(part.categorical)
        else:
            item.numeric.CopyFrom(
                pb.NumericQuestion(min=part.numeric.edges[0], max=part.numeric.edges[-1])
            )
        questions.append(item)
    return questions


def joint_truth(
    question: pb.Question, shares: Sequence[float]
) -> tuple[list[list[float]], list[tuple[float, float]]]:
    """Marginals and associations of a population, from its cell shares (for simulations).

    The marginals per part and value; (covariance, correlation) of every two yes/no or
    numeric parts.
    """
    import numpy as np

    from deniable.shared.questions._joint_estimate import association_values

    f = np.asarray(shares, dtype=np.float64)
    parts = list(question.joint.parts)
    sizes = [len(part_values(part)) for part in parts]
    grid = f.reshape(sizes)
    marginals = [
        grid.sum(axis=tuple(a for a in range(len(sizes)) if a != j)).tolist()
        for j in range(len(sizes))
    ]
    index = [axis.reshape(-1) for axis in np.indices(sizes)]
    scores = [part_scores(part) for part in parts]
    pairs = []
    for a, b in itertools.combinations(range(len(parts)), 2):
        score_a, score_b = scores[a], scores[b]
        if score_a is None or score_b is None:
            continue
        x, y = np.asarray(score_a)[index[a]], np.asarray(score_b)[index[b]]
        pairs.append(association_values(x, y, f))
    return marginals, pairs


def _type_of(part: pb.Question) -> QuestionType:
    """The question type a part is asked and parsed as (binary, categorical or numeric)."""
    return question_type(part.WhichOneof("kind") or "binary")


def _value_index(part: pb.JointPart, answer: Answer) -> int:
    """The index of a part's value: yes/no 1/0, the option's index, or the number's bin."""
    if part.WhichOneof("kind") != "numeric":
        return int(answer)
    edges = list(part.numeric.edges)
    return min(sum(1 for edge in edges[1:-1] if float(answer) >= edge), len(edges) - 2)


def combine(question: pb.Question, answers: Sequence[Answer]) -> int:
    """The cell of the parts' answers (in part order): row-major, the first part slowest."""
    cell = 0
    for part, answer in zip(question.joint.parts, answers, strict=True):
        cell = cell * len(part_values(part)) + _value_index(part, answer)
    return cell


def _needed(cells: int, epsilon: object) -> str:
    """How many participants a cell of average share 1/cells would need, in words."""
    from deniable.shared.questions.categorical import choose_categorical

    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        return ""
    if not 0 < epsilon <= 20:
        return ""
    # OUE and OLH, which auto picks for that many cells, have variances that do not depend
    # on k: the mechanism for MAX_OPTIONS cells has the one for any larger domain.
    mechanism = choose_categorical(MAX_OPTIONS, float(epsilon))
    margin = 0.5 / cells
    n = math.ceil(1.959963984540054**2 * mechanism.estimate_variance(1, 1.0 / cells) / margin**2)
    return (
        f"; at epsilon {epsilon!r} ({mechanism.name}) a cell of average share 1/{cells} would "
        f"need about {n:,} participants to be estimated within +-1/{2 * cells} (95%): group "
        "fewer parts, or use fewer options or bins"
    )


def check_joint(joint: pb.JointQuestion, field: str, epsilon: object = None) -> None:
    """2..8 parts with unique ids, each a valid domain; at most ``MAX_OPTIONS`` cells.

    Raises:
        ValueError: naming the field under ``field`` and the bad value.
    """
    from deniable.shared.questions._survey import QUESTION_ID

    parts = list(joint.parts)
    if not 2 <= len(parts) <= MAX_PARTS:
        raise ValueError(f"{field}: need 2..{MAX_PARTS} parts, got {len(parts)}")
    seen: set[str] = set()
    for index, part in enumerate(parts):
        where = f"{field}[{index}]"
        if not QUESTION_ID.fullmatch(part.id):
            raise ValueError(f"{where}.id: must match [A-Za-z0-9_.-]{{1,64}}, got {shown(part.id)}")
        if part.id in seen:
            raise ValueError(f"{where}.id: duplicate part id {shown(part.id)}")
        seen.add(part.id)
        kind = part.WhichOneof("kind")
        if kind is None:
            raise ValueError(f"{where}: missing its kind (binary, categorical or numeric)")
        if kind == "categorical":
            CATEGORICAL.check(pb.Question(categorical=part.categorical), where)
        elif kind == "numeric":
            _check_edges(list(part.numeric.edges), f"{where}.numeric.edges")
    sizes = [len(part_values(part)) for part in parts]
    cells = math.prod(sizes)
    if cells > MAX_OPTIONS:
        product = " x ".join(str(size) for size in sizes)
        raise ValueError(
            f"{field}: the parts have {product} = {cells:,} cells, above the maximum "
            f"{MAX_OPTIONS}{_needed(cells, epsilon)}"
        )


def _check_edges(edges: list[float], field: str) -> None:
    if not 3 <= len(edges) <= MAX_OPTIONS + 1:
        raise ValueError(f"{field}: need 2..{MAX_OPTIONS} bins, got {max(len(edges) - 1, 0)}")
    for index, edge in enumerate(edges):
        if not math.isfinite(edge) or abs(edge) > MAX_NUMERIC_BOUND:
            raise ValueError(
                f"{field}[{index}]: must be finite, at most {MAX_NUMERIC_BOUND:g} in "
                f"magnitude, got {edge!r}"
            )
        if index and edge <= edges[index - 1]:
            raise ValueError(
                f"{field}[{index}]: edges must increase, got {edge!r} after {edges[index - 1]!r}"
            )


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _part_from_spec(item: object, where: str) -> pb.JointPart:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: must be an object")
    kind = item.get("type", "binary")
    if kind not in PART_TYPES:
        raise ValueError(f"{where}.type: expected one of {', '.join(PART_TYPES)}, got {kind!r}")
    extra = set(item) - {"id", "text", "type"} - PART_KEYS[kind]
    if extra:
        raise ValueError(f"{where}: unknown keys for a {kind} part {sorted(extra)}")
    part = pb.JointPart(id=str(item.get("id", "")), text=str(item.get("text", "")))
    if kind == "binary":
        part.binary.SetInParent()
    elif kind == "categorical":
        try:
            part.categorical.CopyFrom(CATEGORICAL.domain(item))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    else:
        part.numeric.CopyFrom(pb.BinnedNumericQuestion(edges=_edges(item, where)))
    return part


def _edges(item: Mapping[str, Any], where: str) -> list[float]:
    """A numeric part's bin edges: ``edges``, or ``min``, ``max`` and ``bins`` equal bins."""
    if "edges" in item:
        if {"min", "max", "bins"} & set(item):
            raise ValueError(f"{where}: give 'edges', or 'min', 'max' and 'bins', not both")
        edges = item["edges"]
        if not isinstance(edges, list):
            raise ValueError(f"{where}.edges: must be a list of numbers, got {edges!r}")
        return [_number(edge, f"{where}.edges[{i}]") for i, edge in enumerate(edges)]
    missing = [key for key in ("min", "max", "bins") if key not in item]
    if missing:
        raise ValueError(f"{where}: a numeric part needs 'edges', or 'min', 'max' and 'bins'")
    lo, hi = _number(item["min"], f"{where}.min"), _number(item["max"], f"{where}.max")
    bins = item["bins"]
    if isinstance(bins, bool) or not isinstance(bins, int) or not 2 <= bins <= MAX_OPTIONS:
        raise ValueError(f"{where}.bins: must be an integer 2..{MAX_OPTIONS}, got {bins!r}")
    if not lo < hi:
        raise ValueError(f"{where}: 'min' must be below 'max', got {lo!r} and {hi!r}")
    return [lo + (hi - lo) * i / bins for i in range(bins)] + [hi]


class Joint(QuestionType):
    """A joint question (``Question.joint``); the answer is the cell of the parts' answers.

    Example:
        >>> question = pb.Question(joint=pb.JointQuestion(parts=[
        ...     pb.JointPart(id="cheated", binary=pb.BinaryQuestion()),
        ...     pb.JointPart(id="copied", binary=pb.BinaryQuestion())]))
        >>> JOINT.parse_answer("yes, no", question), cell_names(question)[2]
        (2, 'cheated=yes, copied=no')
    """

    name: ClassVar[str] = "joint"
    label: ClassVar[str] = "joint"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"parts", "epsilon", "mechanism"})
    auto_preference: ClassVar[tuple[str, ...]] = AUTO_PREFERENCE

    def domain(self, item: Mapping[str, Any]) -> pb.JointQuestion:
        """The ``parts``: each an object with ``id``, ``text``, ``type`` and its domain."""
        parts = item.get("parts")
        if not isinstance(parts, list):
            raise ValueError(f"'parts' must be a list of objects, got {parts!r}")
        joint = pb.JointQuestion(
            parts=[_part_from_spec(part, f"parts[{i}]") for i, part in enumerate(parts)]
        )
        check_joint(joint, "parts", item.get("epsilon"))
        return joint

    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """(k,): the number of cells, the product of the parts' sizes."""
        return (math.prod(len(part_values(part)) for part in question.joint.parts),)

    def domain_fields(self, mechanism: Mechanism) -> dict[str, Any]:
        """``k``, the number of cells."""
        return {"k": int(mechanism.k)}  # type: ignore[attr-defined]

    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """Not defined by a mechanism alone: a joint question is built from its parts."""
        raise ValueError("a joint question is built from its parts, not from a mechanism")

    def check(self, question: pb.Question, where: str) -> None:
        """2..8 parts, unique ids, valid domains, at most 1024 cells."""
        check_joint(question.joint, f"{where}.joint.parts")

    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """Each part's answer in part order, separated by commas, giving the cell's index.

        A part's answer is written as for a question of its kind (a numeric part takes a
        number on its range, which falls in one bin); an option whose name holds a comma
        is given by its number.
        """
        pieces = text.split(",")
        parts = part_questions(question)
        if len(pieces) != len(parts):
            raise ValueError(
                f"answer must be {len(parts)} comma-separated values "
                f"({self.answer_hint(question)}), got {text!r}"
            )
        answers = []
        for part, piece in zip(parts, pieces, strict=True):
            try:
                answers.append(_type_of(part).parse_answer(piece, part))
            except ValueError as error:
                raise ValueError(f"part {part.id!r}: {error}") from None
        return combine(question, answers)

    def answer_hint(self, question: pb.Question) -> str:
        """``cheated,copied in order, comma-separated: yes or no; yes or no``."""
        parts = part_questions(question)
        hints = "; ".join(f"{part.id}: {_type_of(part).answer_hint(part)}" for part in parts)
        return f"{', '.join(part.id for part in parts)} in order, comma-separated ({hints})"

    def placeholder(self, question: pb.Question) -> str:
        """``V1,V2``: one value per part."""
        return ",".join(f"V{i}" for i in range(1, len(question.joint.parts) + 1))

    def prompt_lines(self, question: pb.Question) -> list[str]:
        """One line per part: its id, text and what it takes; one report for all of them."""
        lines = [f"{len(question.joint.parts)} parts, answered together in ONE randomized report:"]
        for part, values in zip(
            question.joint.parts, map(part_values, question.joint.parts), strict=True
        ):
            lines.append(f"  {part.id}: {part.text} ({' | '.join(values)})")
        return lines

    def parts(self, question: pb.Question) -> list[pb.Question]:
        """Each part as a question of its own, asked in turn by an interactive prompt."""
        return part_questions(question)

    def combine(self, question: pb.Question, answers: Sequence[Answer]) -> Answer:
        """The cell of the parts' answers."""
        return combine(question, answers)

    def complete_estimate(
        self,
        question: pb.Question,
        mechanism: Mechanism,
        estimate: pb.Estimate,
        *,
        simultaneous: bool = False,
    ) -> None:
        """Cells named ``part=value, ...``; each part's marginal; each scored pair's association.

        See :func:`~deniable.shared.questions._joint_estimate.complete_joint_estimate`.
        """
        from deniable.shared.questions._joint_estimate import complete_joint_estimate

        parts = list(question.joint.parts)
        complete_joint_estimate(
            question,
            cast(FrequencyOracle, mechanism),  # every joint mechanism is a frequency oracle
            estimate,
            cell_names(question),
            [part_values(part) for part in parts],
            [part_scores(part) for part in parts],
            simultaneous=simultaneous,
        )

    def describe(self, question: pb.Question) -> str:
        """``joint of a (2) x b (3): 6 cells, grr, epsilon = E (exact)``."""
        parts = " x ".join(f"{part.id} ({len(part_values(part))})" for part in question.joint.parts)
        cells = math.prod(len(part_values(part)) for part in question.joint.parts)
        name = question.mechanism.registered.name or question.mechanism.WhichOneof("kind")
        return (
            f"joint of {parts}: {cells} cells in one report, {name}, "
            f"epsilon = {question.privacy.epsilon:.4f} (exact)"
        )


JOINT = register_question_type(Joint())
