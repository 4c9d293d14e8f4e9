"""Previews: the interval a query would have, equal to the real one's, reading no randomness."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from deniable.aggregator.central.curator import (
    PrivacyUnit,
    SumSpec,
    _noise,
    _selection,
    make_release,
    noisy_count,
    noisy_histogram,
    noisy_mean,
    noisy_mean_public_n,
    noisy_sum,
    preview_count,
    preview_histogram,
    preview_mean,
    preview_mean_public_n,
    preview_release,
    preview_selection,
    preview_sum,
    select_keys,
)
from deniable.shared.sampling import generator_source

UNITS = [PrivacyUnit(), PrivacyUnit("person", 4)]
SPEC = SumSpec.build("pay", "float", -100, 2500, "0.5")


def _seeded() -> Any:
    return generator_source(np.random.default_rng(51))


@pytest.mark.parametrize("unit", UNITS, ids=["rows", "person"])
@pytest.mark.parametrize("neighbours", ["add-remove", "replace"])
@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_previews_equal_the_intervals_of_real_releases(
    unit: PrivacyUnit, neighbours: str, confidence: float
) -> None:
    c = confidence
    count = noisy_count(40, 0.7, neighbours, unit, confidence=c, source=_seeded())
    preview = preview_count(0.7, neighbours, unit, confidence=c)
    assert (preview.half_width, preview.scale) == (count.half_width, float(count.scale))
    bins = noisy_histogram([("a", 4)], 0.7, neighbours, unit, confidence=c, source=_seeded())
    preview = preview_histogram(0.7, neighbours, unit, confidence=c)
    assert preview.half_width == bins.bins[0][1].half_width
    total = noisy_sum(900, SPEC, 0.7, neighbours, unit, confidence=c, source=_seeded())
    preview = preview_sum(SPEC, 0.7, neighbours, unit, confidence=c)
    assert (preview.half_width, preview.scale) == (total.half_width, total.scale)
    mean = noisy_mean(900, 3, SPEC, 0.7, neighbours, unit, confidence=c, source=_seeded())
    parts = preview_mean(SPEC, 0.7, neighbours, unit, confidence=c).parts["parts"]
    assert parts["sum_half_width"] == mean.total.half_width
    assert parts["count_half_width"] == mean.count.half_width
    selection = select_keys([("a", 50)], 0.7, 1e-6, neighbours, unit, confidence=c,
                            source=_seeded())  # fmt: skip
    preview = preview_selection(0.7, 1e-6, neighbours, unit, confidence=c)
    assert preview.half_width == selection.plan.half_width
    assert preview.parts["threshold"] == selection.plan.threshold
    assert preview.parts["delta"] == selection.to_dict()["delta"]
    release = make_release({("a",): 3}, [("k", "str", ["a", "b", "c"])], 0.7, neighbours, unit,
                           source=_seeded())  # fmt: skip
    answer = release.answer({"k": ["a", "b"]}, c)
    preview = preview_release(0.7, neighbours, unit, cells=2, confidence=c)
    assert preview.half_width == answer.high - answer.value


@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_the_public_mean_preview_equals_its_release(confidence: float) -> None:
    spec = SumSpec.build("age", "int", 18, 70, None)
    unit = PrivacyUnit()
    mean = noisy_mean_public_n(4000, 100, 100, spec, 0.5, "replace", unit,
                               confidence=confidence, source=_seeded())  # fmt: skip
    preview = preview_mean_public_n(spec, 100, 0.5, "replace", unit, confidence=confidence)
    assert (preview.half_width, preview.scale) == (mean.half_width, mean.scale)
    assert preview.to_dict()["public_rows"] == 100


def _refuse(*args: object) -> Any:
    raise AssertionError("a preview read randomness")


def test_a_preview_reads_no_randomness_and_spends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", _refuse)
    monkeypatch.setattr(_noise, "discrete_laplace", _refuse)
    monkeypatch.setattr(_selection, "discrete_laplace", _refuse)
    unit = PrivacyUnit("person", 2)
    previews = [
        preview_count(1.0, "add-remove", unit),
        preview_histogram(1.0, "replace", unit),
        preview_sum(SPEC, 1.0, "replace", unit),
        preview_mean(SPEC, 1.0, "add-remove", unit),
        preview_mean_public_n(SPEC, 10, 1.0, "replace", PrivacyUnit()),
        preview_selection(1.0, 1e-6, "replace", unit),
        preview_release(1.0, "replace", unit, cells=3),
    ]
    for preview in previews:
        document = preview.to_dict()
        assert document["preview"] is True
        assert document["spent"] == 0.0
        assert document["privacy_unit"]["max_contributions"] == preview.unit.max_contributions
        assert {"half_width", "confidence", "method"} <= set(document["interval"])
    with pytest.raises(AssertionError, match="read randomness"):  # the trap is armed
        noisy_count(3, 1.0, "add-remove", unit)
