"""A survey spec's epsilon is stored as asked (to 1e-6) up to the cap, and refused above it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.shared.mechanisms import mechanisms_for
from deniable.shared.questions import (
    MAX_SURVEY_EPSILON,
    MIN_SURVEY_EPSILON,
    question_from_spec,
    question_types,
)

DOMAINS: dict[str, dict[str, object]] = {
    "binary": {},
    "categorical": {"options": [f"o{i}" for i in range(40)]},
    "numeric": {"min": 0, "max": 40},
}
GRID = [float(e) for e in np.geomspace(MIN_SURVEY_EPSILON * 1.01, MAX_SURVEY_EPSILON, 400)]
CASES = [
    (kind, name)
    for kind in question_types()
    for name in ["auto", *(cls.name for cls in mechanisms_for(kind))]
    if kind in DOMAINS and hasattr(mechanisms_for(kind)[0], "from_epsilon")
]


def spec(kind: str, name: str, epsilon: object) -> dict[str, object]:
    return {"id": "q", "text": "t", "type": kind, "mechanism": name, "epsilon": epsilon,
            **DOMAINS[kind]}  # fmt: skip


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_every_mechanism_stores_the_epsilon_asked_up_to_the_cap(kind: str, name: str) -> None:
    worst = 0.0
    for epsilon in [*GRID, MAX_SURVEY_EPSILON]:
        _, mechanism = question_from_spec(spec(kind, name, epsilon), "q")
        assert mechanism.epsilon <= epsilon * (1 + 1e-15)  # certified: never above the ask
        worst = max(worst, (epsilon - mechanism.epsilon) / epsilon)
    assert worst < 1e-6


@pytest.mark.parametrize(("kind", "name"), CASES)
@pytest.mark.parametrize("epsilon", [math.nextafter(MAX_SURVEY_EPSILON, math.inf), 37.5, 100, 1e6])
def test_above_the_cap_is_refused_naming_the_largest_allowed(
    kind: str, name: str, epsilon: float
) -> None:
    with pytest.raises(ValueError, match="above the largest allowed") as caught:
        question_from_spec(spec(kind, name, epsilon), "questions[0]")
    assert str(caught.value).startswith(
        f"questions[0]: 'epsilon' is {epsilon!r}, above the largest allowed, 20.0: "
    )


@pytest.mark.parametrize(
    ("epsilon", "message"),
    [
        (math.nan, "got nan"),
        (math.inf, "got inf"),
        (-math.inf, "got -inf"),
        (0, "got 0"),
        (-1, "got -1"),
        ("2", "must be a real number, got '2' (str)"),
    ],
)
@pytest.mark.parametrize("kind", list(DOMAINS))
def test_nan_infinity_zero_and_negatives_are_named(
    kind: str, epsilon: object, message: str
) -> None:
    with pytest.raises(ValueError, match="epsilon must be") as caught:
        question_from_spec(spec(kind, "auto", epsilon), "questions[0]")
    assert str(caught.value).startswith("questions[0]: epsilon must be ")
    assert message in str(caught.value)
