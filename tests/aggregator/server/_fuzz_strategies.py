"""Hypothesis strategies for fuzzing the aggregator: malformed messages, wire bytes, metadata."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import grpc
from hypothesis import strategies as st

from deniable.shared.mechanisms import RandomizedResponse, mechanisms_for, registered
from deniable.shared.questions import (
    categorical_mechanism,
    numeric_mechanism,
    question_types,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

Code = grpc.StatusCode
HUGE = "x" * 100_000  # a 100 KB string
ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
PRIME = (1 << 61) - 1  # OLH hash family modulus
# Statuses each RPC may answer to any request it is sent (a request under the size limit).
ALLOWED: dict[str, frozenset[Code]] = {
    name: frozenset({Code.OK, Code.INVALID_ARGUMENT, *extra})
    for name, extra in {
        "CreateSurvey": {Code.UNAUTHENTICATED},
        "GetSurvey": {Code.NOT_FOUND},
        "ListSurveys": {Code.UNAUTHENTICATED},  # closed surveys without the admin token
        "CloseSurvey": {Code.NOT_FOUND, Code.UNAUTHENTICATED},
        "SubmitReports": {
            Code.NOT_FOUND,
            Code.FAILED_PRECONDITION,
            Code.ALREADY_EXISTS,
            Code.RESOURCE_EXHAUSTED,
            Code.UNAUTHENTICATED,
            Code.PERMISSION_DENIED,
        },
        "GetEstimate": {Code.NOT_FOUND, Code.FAILED_PRECONDITION},
        "IssueTokens": {Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.UNAUTHENTICATED},
        "ExportReports": {Code.NOT_FOUND, Code.UNAUTHENTICATED},
    }.items()
}
T = TypeVar("T")
VALUE_MEMBERS = tuple(f.name for f in pb.Report.DESCRIPTOR.oneofs_by_name["value"].fields)
# The mechanisms (``Mechanism.kind``) each kind of question admits, and each mechanism's
# report value (``Report.value``), from the registry.
MECHANISMS_FOR: dict[str, tuple[str, ...]] = {
    kind: tuple(cls.name for cls in mechanisms_for(kind)) for kind in question_types()
}
VALUE_FOR: dict[str, tuple[str, ...]] = {
    name: cls.value_fields or (cls.value_field,) for name, cls in registered().items()
}  # every member each mechanism's reports may arrive in (current and older clients')

# --- scalars -------------------------------------------------------------------------------

SPECIAL_DOUBLES = [
    math.nan,
    -math.nan,
    math.inf,
    -math.inf,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1 - 2**-53,
    2.0**53,
    2.0**64,
    1e-300,
]
doubles = st.one_of(st.sampled_from(SPECIAL_DOUBLES), st.floats())
uint32s = st.one_of(
    st.sampled_from([0, 1, 2, 3, 8, 30, 31, 32, 64, 2**31, 2**32 - 1]), st.integers(0, 2**32 - 1)
)
uint64s = st.one_of(
    st.sampled_from([0, 1, 2, 2**31, 2**53 + 1, 2**63, 2**64 - 1]), st.integers(0, 2**64 - 1)
)
BAD_IDS = [
    "",
    " ",
    "a b",
    "é",
    "id/slash",
    "x" * 129,
    HUGE,
    "'; DROP TABLE log; --",
    "\x00",
    "\u202eevil",
    "ＡＢＣ",
]
strings = st.one_of(
    st.sampled_from(BAD_IDS),
    st.text(max_size=30),
    st.text(ID_CHARS, min_size=1, max_size=70),
)


def mostly(good: st.SearchStrategy[T], bad: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """``good`` three times in four, else ``bad``."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda g: good if g else bad)


def printable(max_size: int) -> st.SearchStrategy[str]:
    """Visible ASCII and spaces: what a gRPC metadata value can carry."""
    return st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=max_size)


# --- survey specs --------------------------------------------------------------------------

VALID_MECHANISMS: dict[str, list[pb.Mechanism]] = {
    "binary": [RandomizedResponse(a).to_message() for a in (0.5, 0.25)],
    "categorical": [
        categorical_mechanism("grr", 5, alpha=0.5).to_message(),
        categorical_mechanism("oue", 5, epsilon=1.0).to_message(),
        categorical_mechanism("olh", 5, epsilon=2.0).to_message(),
    ],
    "numeric": [
        numeric_mechanism(kind, 0.0, 40.0, 1.0).to_message()
        for kind in ("laplace", "duchi", "piecewise", "hybrid")
    ],
}
_PARAMETERS: dict[str, tuple[type[Any], dict[str, st.SearchStrategy[Any]]]] = {
    "randomized_response": (pb.RandomizedResponse, {"alpha": doubles}),
    "grr": (pb.GeneralizedRandomizedResponse, {"alpha": doubles}),
    "oue": (pb.OptimizedUnaryEncoding, {"q": doubles}),
    "olh": (pb.OptimizedLocalHashing, {"g": uint32s, "alpha": doubles}),
    "laplace": (pb.NumericLaplace, {"epsilon": doubles, "grid_bits": uint32s}),
    "duchi": (pb.Duchi, {"bound": doubles}),
    "piecewise": (
        pb.Piecewise,
        {"center_cells": uint64s, "outer_cells": uint64s, "grid_bits": uint32s},
    ),
    "hybrid": (
        pb.Hybrid,
        {
            "beta": doubles,
            "bound": doubles,
            "center_cells": uint64s,
            "outer_cells": uint64s,
            "grid_bits": uint32s,
        },
    ),
    # A mechanism by registry name: unknown names, built-ins' names, odd parameters.
    "registered": (
        pb.RegisteredMechanism,
        {
            "name": st.one_of(st.sampled_from(["", "grr", "oue", "randomized_response"]), strings),
            "parameters": st.dictionaries(st.text(max_size=12), doubles, max_size=3),
        },
    ),
}


@st.composite
def random_mechanisms(
    draw: st.DrawFn, kinds: Sequence[str | None] = (None, *_PARAMETERS)
) -> pb.Mechanism:
    """One of ``kinds`` of mechanism (None: unset) with arbitrary, mostly invalid, parameters."""
    kind = draw(st.sampled_from(kinds))
    if kind is None:
        return pb.Mechanism()
    message, fields = _PARAMETERS[kind]
    chosen = {name: draw(value) for name, value in fields.items() if draw(st.booleans())}
    return pb.Mechanism(**{kind: message(**chosen)})


mechanisms = st.one_of(
    random_mechanisms(), st.sampled_from([m for ms in VALID_MECHANISMS.values() for m in ms])
)
good_options = st.lists(
    st.text(ID_CHARS, min_size=1, max_size=8), min_size=2, max_size=6, unique=True
)
options = mostly(
    good_options,
    st.one_of(
        st.lists(st.one_of(st.text(max_size=8), st.just(HUGE[:201])), max_size=6),
        st.sampled_from([[f"o{i}" for i in range(1025)], ["same", "same"], []]),
    ),
)


@st.composite
def questions(draw: st.DrawFn, plausible: bool = False) -> pb.Question:
    """A question with any id, text, kind, options, range and mechanism (often invalid).

    ``plausible``: a valid id, text and options, and a mechanism of the question's kind
    (with any parameters), so that the mechanism's own checks are what is exercised.
    """
    good_id = st.text(ID_CHARS, min_size=1, max_size=64)
    question = pb.Question(
        id=draw(good_id if plausible else mostly(good_id, strings)),
        text=draw(st.just("Question?") if plausible else mostly(st.just("Question?"), strings)),
    )
    kinds = ["binary", "categorical", "numeric"]
    kind = draw(st.sampled_from(kinds if plausible else [None, *kinds]))
    if kind == "binary":
        question.binary.SetInParent()
    elif kind == "categorical":
        question.categorical.options.extend(draw(good_options if plausible else options))
    elif kind == "numeric":
        finite = st.floats(allow_nan=False, allow_infinity=False)
        ordered = st.lists(finite, min_size=2, max_size=2, unique=True).map(sorted)
        bounds = ordered if plausible else st.one_of(st.tuples(doubles, doubles), ordered)
        question.numeric.min, question.numeric.max = draw(bounds)
    modes = ["valid", "kind"] if plausible else ["valid", "kind", "any", "none"]
    mode = draw(st.sampled_from(modes))
    if mode == "valid" and kind is not None:
        question.mechanism.CopyFrom(draw(st.sampled_from(VALID_MECHANISMS[kind])))
    elif mode == "kind" and kind is not None:  # the right kind, any parameters
        question.mechanism.CopyFrom(draw(random_mechanisms(MECHANISMS_FOR[kind])))
    elif mode != "none":
        question.mechanism.CopyFrom(draw(mechanisms))
    if draw(st.booleans()):
        question.privacy.epsilon = draw(doubles)  # the server must compute it itself
    return question


@st.composite
def create_requests(draw: st.DrawFn, plausible: bool = False) -> pb.CreateSurveyRequest:
    """CreateSurvey requests: odd titles, 0..3 odd questions or 101 good ones, any gate.

    ``plausible``: a title, 1..3 plausible questions (see :func:`questions`), no gate.
    """
    if plausible:
        return pb.CreateSurveyRequest(
            title="Plausible",
            questions=draw(
                st.lists(
                    questions(plausible=True), min_size=1, max_size=3, unique_by=lambda q: q.id
                )
            ),
            enrollment_required=draw(st.booleans()),
        )
    if draw(st.integers(0, 9)) == 0:
        drawn = [
            pb.Question(
                id=f"q{i}",
                text="t",
                binary=pb.BinaryQuestion(),
                mechanism=VALID_MECHANISMS["binary"][0],
            )
            for i in range(101)
        ]
    else:
        drawn = draw(mostly(st.lists(questions(), min_size=1, max_size=3), st.just([])))
    return pb.CreateSurveyRequest(
        title=draw(mostly(st.just("Fuzz"), strings)),
        questions=drawn,
        min_reports=draw(mostly(st.integers(0, 10), uint64s)),
        enrollment_required=draw(st.booleans()),
    )


# --- report values -------------------------------------------------------------------------


@st.composite
def out_of_domain(draw: st.DrawFn, mechanism: str) -> dict[str, Any]:
    """A value of the right member that no report of ``mechanism`` (on 5 options) can be."""
    if mechanism == "grr":
        return {draw(st.sampled_from(["option", "option_fixed"])): draw(st.integers(5, 2**32 - 1))}
    if mechanism == "oue":
        wrong = draw(st.binary(max_size=4).filter(lambda b: len(b) != 1))
        return {"bits": draw(st.sampled_from([wrong, b"\x20", b"\xff"]))}
    if mechanism == "olh":
        big = st.integers(PRIME, 2**64 - 1)
        a, b, value = draw(
            st.sampled_from(
                [
                    (big, st.just(0), st.just(0)),
                    (st.just(0), big, st.just(0)),
                    (st.just(1), st.just(1), st.integers(8, 2**32 - 1)),
                ]
            )
        )
        field = draw(st.sampled_from(["value", "value_fixed"]))
        return {"hashed": pb.HashedOption(a=draw(a), b=draw(b), **{field: draw(value)})}
    number = st.one_of(
        st.sampled_from([math.nan, math.inf, -math.inf, 2.0**64, -(2.0**54)]),
        st.floats(min_value=2.0**54, allow_infinity=False),
    )
    return {"number": draw(number)}  # beyond every numeric mechanism's bound (< 2^53)


@st.composite
def wrong_members(draw: st.DrawFn, expected: tuple[str, ...]) -> dict[str, Any]:
    """A value in another member of the ``value`` oneof than any the mechanism accepts."""
    member = draw(st.sampled_from([m for m in VALUE_MEMBERS if m not in expected]))
    value: Any = {
        "bit": st.booleans(),
        "option": uint32s,
        "option_fixed": uint32s,
        "bits": st.binary(max_size=3),
        "hashed": st.builds(pb.HashedOption, a=st.integers(0, 9), b=st.integers(0, 9)),
        "number": doubles,
        "encoded": st.binary(max_size=8),
    }[member]
    return {member: draw(value)}


def fresh_ids(prefix: str) -> Iterator[str]:
    """Never-seen report ids of one length: ``prefix`` then a 10-digit counter."""
    return (f"{prefix}{n:010d}" for n in itertools.count())
