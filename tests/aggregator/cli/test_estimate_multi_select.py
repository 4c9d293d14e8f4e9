"""estimate's multi-select rendering: the wire estimate to JSON fields and the text table."""

from __future__ import annotations

from deniable.aggregator.cli.estimate._command import estimate_to_dict
from deniable.aggregator.questions import analysis_for
from deniable.shared.mechanisms import ItemRandomizedResponse, Tally
from deniable.shared.wire.v1 import aggregator_pb2 as pb

ITEMS = ["apples", "pears", "plums"]
SPEC = ItemRandomizedResponse(k=3, q=0.25)


QUESTION = pb.Question(
    id="fruit", multi_select=pb.MultiSelectQuestion(items=ITEMS), mechanism=SPEC.to_message()
)


def wire(tally: Tally, given: int | None = None, item: int | None = None) -> pb.Estimate:
    question = QUESTION
    estimate = pb.Estimate(question_id="fruit", **SPEC.estimate(tally).wire_fields(question))
    if given is not None and item is not None:
        estimate.conditional.CopyFrom(SPEC.conditional(tally, given, item).wire(ITEMS))
    return estimate


def test_json_carries_the_symmetric_matrix_with_item_shares_on_its_diagonal() -> None:
    tally = Tally(100, (60, 50, 30, 40, 20, 20))
    data = estimate_to_dict(wire(tally, 0, 1), QUESTION)
    assert [item["item"] for item in data["items"]] == ITEMS
    assert "estimate" not in data  # per item instead
    matrix = data["cooccurrence"]
    want = SPEC.estimate_items(tally)
    for i in range(3):
        for j in range(3):
            assert matrix["estimate"][i][j] == want.pair_estimate[i][j]
            assert matrix["ci_low"][i][j] == (want.ci_low[i] if i == j else want.pair_ci_low[i][j])
    assert data["conditional"]["given"] == "apples"
    assert data["conditional"]["estimate_raw"] == SPEC.conditional(tally, 0, 1).estimate_raw


def _lines(estimate: pb.Estimate) -> str:
    lines: list[str] = []
    analysis_for(QUESTION).estimate_lines(estimate_to_dict(estimate, QUESTION), lines.append)
    return "\n".join(lines)


def test_the_text_shows_items_the_table_and_the_conditional_share() -> None:
    out = _lines(wire(Tally(100, (60, 50, 30, 40, 20, 20)), 0, 1))
    assert "co-occurrence: share choosing both (diagonal: the item's share)" in out
    assert "      apples      pears      plums" in out
    share = SPEC.conditional(Tally(100, (60, 50, 30, 40, 20, 20)), 0, 1)
    assert (
        f"among those who chose apples: pears {share.estimate:.4f} "
        f"[{share.ci_low:.4f}, {share.ci_high:.4f}]" in out
    )
    # at the noise floor nobody is estimated to choose apples: said, not divided by 0
    out = _lines(wire(Tally(100, (25, 50, 30, 10, 10, 20)), 0, 1))
    assert "among those who chose apples: pears undefined" in out
