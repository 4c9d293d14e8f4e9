"""The mechanism registry and the question types: lookups, validation, and the wire round trip."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from deniable.shared.mechanisms import (
    BUILT_IN,
    GeneralizedRandomizedResponse,
    Mechanism,
    RandomizedResponse,
    Tally,
    mechanism_class,
    mechanism_name,
    mechanism_of,
    mechanisms_for,
    register,
    registered,
    unregister,
)
from deniable.shared.questions import (
    BINARY,
    CATEGORICAL,
    NUMERIC,
    check_question,
    question_from_spec,
    question_type,
    question_types,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

EXAMPLES: list[Mechanism] = [
    BINARY.build("randomized_response", epsilon=1.0),
    *(CATEGORICAL.build(name, 6, epsilon=1.5) for name in ("grr", "oue", "olh")),
    *(NUMERIC.build(name, -3.0, 9.0, epsilon=2.0) for name in ("laplace", "duchi", "piecewise")),
    NUMERIC.build("hybrid", -3.0, 9.0, epsilon=2.0),
]
TRUTHS: dict[str, Any] = {
    "binary": np.array([True, False, True, True]),
    "categorical": np.array([0, 5, 2, 2]),
    "numeric": np.array([-3.0, 9.0, 0.25, 4.0]),
}


def column(field: str, reports: list[pb.Report]) -> Any:
    """The values of received reports in the column form the batch decoder hands over."""
    values = [getattr(report, field) for report in reports]
    if field == "bit":
        return np.array(values, dtype=np.uint8)
    if field in ("option", "option_fixed"):
        return np.array(values, dtype=np.int64)
    if field == "hashed":
        rows = [(v.a, v.b, v.value_fixed if v.HasField("value_fixed") else v.value) for v in values]
        return np.array(rows, dtype=np.uint64).reshape(-1, 3)
    if field == "number":
        return np.array(values, dtype=np.float64)
    return values  # bits, encoded: bytes


def test_every_built_in_is_registered_once_in_order() -> None:
    assert [cls.name for cls in BUILT_IN] == list(registered())[: len(BUILT_IN)]
    assert [cls.name for cls in mechanisms_for("binary")] == ["randomized_response"]
    assert [cls.name for cls in mechanisms_for("categorical")] == ["grr", "oue", "olh"]
    assert [cls.name for cls in mechanisms_for("numeric")] == [
        "laplace", "duchi", "piecewise", "hybrid",
    ]  # fmt: skip
    # A joint question is answered by a frequency oracle on its product domain.
    assert [cls.name for cls in mechanisms_for("joint")] == ["grr", "oue"]
    assert [cls.name for cls in mechanisms_for("multi_select")] == ["item_rr"]
    assert sorted(question_types()) == ["binary", "categorical", "joint", "multi_select", "numeric"]
    for cls in BUILT_IN:
        assert mechanism_class(cls.name) is cls
        assert cls.title
        register(cls)  # again: a no-op
    assert len(registered()) == len(set(registered()))


@pytest.mark.parametrize("mechanism", EXAMPLES, ids=lambda m: m.name)
def test_a_report_goes_over_the_wire_and_tallies_the_same(mechanism: Mechanism) -> None:
    qtype = question_type(mechanism.question_type)
    question = qtype.question_for(mechanism)
    assert mechanism_name(question.mechanism) == mechanism.name
    assert mechanism_of(question) == mechanism
    assert check_question(question, "questions[0]") == mechanism
    rng = np.random.default_rng(5)
    reports = mechanism.perturb_many(TRUTHS[mechanism.question_type], rng)
    received = [
        pb.Report.FromString(pb.Report(report_id=f"r{i}", **value).SerializeToString())
        for i, value in enumerate(mechanism.encode(reports))
    ]
    field = mechanism.accepted_fields[0]  # the field a current client sends
    assert {report.WhichOneof("value") for report in received} == {field}
    decoded = mechanism.read(field, column(field, received))
    assert mechanism.tally(decoded) == mechanism.tally(reports)
    first = mechanism.tally(decoded[:2])
    rest = mechanism.tally(decoded[2:])
    merged = Tally(2, tuple(first)).merge(Tally(2, tuple(rest)))
    assert merged == Tally(4, tuple(mechanism.tally(decoded)))
    joined = mechanism.join([decoded[:1], decoded[1:1], decoded[1:]])  # one part empty
    assert joined is not None
    assert len(joined) == 4
    assert mechanism.tally(joined) == mechanism.tally(decoded)
    estimate = mechanism.estimate(merged, 0.9)
    assert estimate.n == 4
    assert set(estimate.wire_fields(question)) <= set(pb.Estimate.DESCRIPTOR.fields_by_name)
    carried = " or ".join(mechanism.accepted_fields)
    with pytest.raises(ValueError, match=f"missing \\({mechanism.name} reports carry {carried}\\)"):
        mechanism.read("encoded" if field != "encoded" else "bit", [])
    assert f"epsilon = {mechanism.epsilon:.2f}" in mechanism.explain()
    assert mechanism.describe()["mechanism"] == mechanism.name
    assert mechanism.delta == 0.0


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (pb.Question(), r"^kind: missing \(binary, categorical or numeric\)$"),
        (pb.Question(binary=pb.BinaryQuestion()), r"^mechanism: missing \(a binary question "),
        (
            pb.Question(binary=pb.BinaryQuestion(), mechanism=GeneralizedRandomizedResponse(
                2, 0.5).to_message()),
            r"^mechanism: grr does not apply to a binary question \(expected randomized_resp",
        ),
        (
            pb.Question(binary=pb.BinaryQuestion(), mechanism=pb.Mechanism(
                randomized_response=pb.RandomizedResponse(alpha=1.5))),
            r"^mechanism\.randomized_response\.alpha: alpha must be in \(0, 1\], got 1\.5$",
        ),
        (
            pb.Question(binary=pb.BinaryQuestion(), mechanism=pb.Mechanism(
                registered=pb.RegisteredMechanism(name="nope"))),
            r"^mechanism\.registered\.name: unknown mechanism 'nope' \(a binary question takes",
        ),
    ],
)  # fmt: skip
def test_a_bad_question_is_refused_naming_the_field(question: pb.Question, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mechanism_of(question)


@dataclass(frozen=True)
class _Flip(RandomizedResponse):
    """A yes/no extension registered by name (randomized response under another name)."""

    name: ClassVar[str] = "flip_test"


@pytest.fixture
def flip() -> Iterator[type[_Flip]]:
    register(_Flip)
    yield _Flip
    unregister("flip_test")


def test_an_extension_travels_by_name_with_its_parameters(flip: type[_Flip]) -> None:
    mechanism = flip(0.25)
    message = mechanism.to_message()
    assert message.WhichOneof("kind") == "registered"
    assert dict(message.registered.parameters) == {"alpha": 0.25}
    assert [cls.name for cls in mechanisms_for("binary")] == ["randomized_response", "flip_test"]
    question = pb.Question(binary=pb.BinaryQuestion(), mechanism=message)
    assert mechanism_name(question.mechanism) == "flip_test"
    assert BINARY.build("flip_test", alpha=0.25) == mechanism
    with pytest.raises(ValueError, match="mechanism name 'flip_test' is already registered"):
        register(type("Other", (_Flip,), {"__doc__": "x"}))


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"name": "Bad-Name"}, r"mechanism name must match \[a-z\]\[a-z0-9_\]\{0,63\}"),
        ({"name": "registered"}, "mechanism name must match"),
        ({"name": "ok", "question_type": "ranking"}, "question_type must be one of"),
        ({"name": "ok", "also_answers": ("ranking",)}, "question_type must be one of"),
        ({"name": "ok", "value_field": "vector"}, "value_field must be one of"),
        ({"name": "ok", "value_fields": ("bit", "vector")}, r"must be one of .*, got 'vector'"),
    ],
)
def test_registration_checks_the_class(attributes: dict[str, object], message: str) -> None:
    cls = type("Probe", (RandomizedResponse,), attributes)
    with pytest.raises(ValueError, match=message):
        register(cls)
    assert "ok" not in registered()


def test_built_ins_cannot_be_unregistered() -> None:
    with pytest.raises(ValueError, match="'grr' is built in"):
        unregister("grr")
    assert "grr" in registered()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"id": "q", "text": "t", "type": "ranking"}, r"q\.type: expected one of binary, categ"),
        ({"id": "q", "text": "t", "epsilon": 1, "options": ["a"]}, r"unknown keys for a binary"),
        ({"id": "q", "text": "t"}, r"give exactly one of 'alpha' or 'epsilon'"),
        ({"id": "q", "text": "t", "type": "numeric", "min": 0, "max": 1}, "'epsilon' is requir"),
        (
            {"id": "q", "text": "t", "type": "categorical", "options": ["a", "a"], "epsilon": 1},
            r"q\.categorical\.options\[1\]: duplicate option 'a'",
        ),
        (
            {"id": "q", "text": "t", "type": "numeric", "min": 0, "max": 1e16, "epsilon": 1},
            r"q\.numeric\.max: 1e\+16 is beyond ±1e\+15",
        ),
        ({"id": "q", "text": "t", "epsilon": 1e-4}, r"q\.mechanism: epsilon .* below the minimum"),
        ({"id": "q", "text": "t", "alpha": 1.0}, r"q\.mechanism: randomized_response .* no priv"),
    ],
)  # fmt: skip
def test_a_survey_spec_entry_is_checked_as_the_daemon_will(
    item: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        question_from_spec(item, "q")


def test_a_survey_spec_entry_builds_its_question_and_mechanism() -> None:
    question, mechanism = question_from_spec(
        {"id": "os", "text": "Which?", "type": "categorical", "options": ["a", "b"], "alpha": 0.5},
        "q",
    )
    assert (question.id, list(question.categorical.options)) == ("os", ["a", "b"])
    assert mechanism == GeneralizedRandomizedResponse(2, 0.5)
    assert mechanism_of(question) == mechanism
    numeric, auto = question_from_spec(
        {"id": "h", "text": "Hours?", "type": "numeric", "min": 0, "max": 40, "epsilon": 1.0}, "q"
    )
    assert auto.name == "duchi"
    assert NUMERIC.describe(numeric).startswith("a number in [0, 40], duchi, epsilon = ")
