"""A question is recognised by its content; the memo finds its report wherever it was asked."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deniable.client._content import content_of, copy_report, repeats
from deniable.client._ledger import Charge, Ledger, load_ledger
from deniable.client._memo import Kept, Memo, load_memo, save_memo
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question


def _colour(options: list[str], alpha: float = 0.5) -> pb.Question:
    return pb.Question(
        id="colour",
        text="Favourite colour?",
        categorical=pb.CategoricalQuestion(options=options),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=alpha)),
    )


def test_ids_case_spacing_and_the_servers_privacy_figures_do_not_count() -> None:
    question = _colour(["red", "green"])
    same = _colour([" RED", "green\t"])
    same.id = "other"
    same.text = "favourite   COLOUR?"
    same.privacy.epsilon = 123.0  # the server's figure, never trusted
    assert content_of(same) == content_of(question)


@pytest.mark.parametrize(
    "change",
    [
        lambda q: setattr(q, "text", "Favourite color?"),
        lambda q: q.categorical.options.append("blue"),
        lambda q: setattr(q.mechanism.grr, "alpha", 0.25),
        lambda q: q.mechanism.CopyFrom(pb.Mechanism(oue=pb.OptimizedUnaryEncoding(q=0.25))),
    ],
    ids=["text", "option", "parameter", "mechanism"],
)
def test_any_other_change_is_a_new_question(change: object) -> None:
    question, changed = _colour(["red", "green"]), _colour(["red", "green"])
    change(changed)  # type: ignore[operator]
    assert content_of(changed) != content_of(question)


def test_a_copy_keeps_the_value_and_takes_the_new_ids() -> None:
    kept = pb.Report(report_id="a" * 32, survey_id="s1", question_id="q", bit=True)
    target = binary_question("cheated")
    copy = copy_report(kept, "s2", target)
    assert (copy.survey_id, copy.question_id, copy.bit) == ("s2", "cheated", True)
    assert copy.report_id != kept.report_id
    assert len(copy.report_id) == 32
    assert copy.mechanism == target.mechanism
    same = copy_report(kept, "s1", binary_question("q"))
    assert same.report_id == kept.report_id  # the same survey under another name: one report


def test_repeats_map_later_questions_to_the_first() -> None:
    first, again, other = binary_question("a"), binary_question("a"), binary_question("b")
    again.id = "a2"
    assert repeats([first, other, again]) == {"a2": "a"}


def _kept(aggregator: str, report_id: str, at: str, content: str | None) -> Kept:
    report = pb.Report(report_id=report_id, survey_id="s", question_id=report_id[:3], bit=True)
    return Kept(aggregator, report, None, at, content=content)


def test_the_memo_finds_the_earliest_report_by_content_and_keeps_it(tmp_path: Path) -> None:
    memo = Memo().add([_kept("b:1", "bbb" * 10, "2026-02-01T00:00:00Z", "c1")])
    memo = memo.add([_kept("a:1", "aaa" * 10, "2026-01-01T00:00:00Z", "c1")])
    memo = memo.add([_kept("a:1", "ccc" * 10, "2026-01-01T00:00:00Z", None)])
    twin = memo.twin("c1")
    assert twin is not None
    assert twin.report.report_id == "aaa" * 10
    assert memo.twin("c2") is None
    save_memo(tmp_path / "memo.json", memo)
    again = load_memo(tmp_path / "memo.json")
    assert again == memo
    assert again.twin("c1") == twin


def test_a_version_2_memo_loads_without_content(tmp_path: Path) -> None:
    report = pb.Report(report_id="r" * 32, survey_id="s", question_id="q", bit=True)
    document = Memo({("h:1", "s", "q"): Kept("h:1", report, None, "t")}).to_json()
    document["version"] = 2
    for entry in document["reports"]:
        del entry["content"], entry["draw"]
    (tmp_path / "memo.json").write_text(json.dumps(document))
    memo = load_memo(tmp_path / "memo.json")
    assert memo.get("h:1", "s", "q") is not None
    assert memo.twin("anything") is None


def test_a_draw_counts_once_on_the_device_and_once_per_aggregator(tmp_path: Path) -> None:
    first = Charge("a:1", "s", "q", "laplace", 1.0, "1" * 32, "t")
    copy = Charge("b:1", "t", "q", "laplace", 1.0, "2" * 32, "t", draw="1" * 32)
    other = Charge("b:1", "t", "p", "laplace", 0.5, "3" * 32, "t")
    ledger = Ledger((first, copy, other))
    assert (ledger.total(), ledger.spent("a:1"), ledger.spent("b:1")) == (1.5, 1.0, 1.5)
    assert ledger.draws("b:1") == {"1" * 32, "3" * 32}
    # A version 1 ledger (no draws): each charge is its own draw.
    document = {
        "format": "deniable-ledger",
        "version": 1,
        "aggregators": {"a:1": {"s": [{k: v for k, v in first.to_json().items() if k != "draw"}]}},
    }
    (tmp_path / "ledger.json").write_text(json.dumps(document))
    loaded = load_ledger(tmp_path / "ledger.json")
    assert loaded.charges == (first,)
    assert math.isclose(loaded.total(), 1.0)
