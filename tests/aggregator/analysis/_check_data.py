"""Surveys with every kind of question, their reports, and running ``check`` on them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from deniable.shared.mechanisms import Mechanism, NumericMechanism, RandomizedResponse
from deniable.shared.questions import categorical_mechanism, numeric_mechanism
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import RunCli

OPTIONS = ["red", "green", "blue", "black"]
COUNT = 120  # reports per question, sent as FIRST_BATCH then the rest with a resend
FIRST_BATCH = 80
EXTRA = 7  # then a last, mixed batch with this many more reports per question
SPECS: dict[str, Mechanism] = {
    "yesno": RandomizedResponse(0.5),
    "grr": categorical_mechanism("grr", 4, alpha=0.5),
    "oue": categorical_mechanism("oue", 4, epsilon=1.0),
    "olh": categorical_mechanism("olh", 4, epsilon=2.0),
    "duchi": numeric_mechanism("duchi", 0.0, 10.0, 1.0),
    "laplace": numeric_mechanism("laplace", 0.0, 10.0, 1.0),
}


def question(qid: str, spec: Mechanism) -> pb.Question:
    kind: dict[str, Any] = {"binary": pb.BinaryQuestion()}
    if qid in ("grr", "oue", "olh"):
        kind = {"categorical": pb.CategoricalQuestion(options=OPTIONS)}
    elif qid in ("duchi", "laplace"):
        kind = {"numeric": pb.NumericQuestion(min=0.0, max=10.0)}
    return pb.Question(id=qid, text=f"{qid}?", mechanism=spec.to_message(), **kind)


def reports(survey: pb.Survey, qid: str, count: int, seed: int) -> list[pb.Report]:
    """``count`` randomized reports for one question, with ids unique to (qid, seed)."""
    rng = np.random.default_rng(seed)
    spec = SPECS[qid]
    truths: Any = rng.uniform(0, 10, count) if qid in ("duchi", "laplace") else None
    if truths is None:
        truths = rng.random(count) < 0.3 if qid == "yesno" else rng.integers(0, 4, count)
    mechanism = spec.to_message()
    return [
        pb.Report(report_id=f"{qid}-{seed}-{i}", survey_id=survey.id, question_id=qid,
                  mechanism=mechanism, **value)
        for i, value in enumerate(spec.encode(spec.perturb_many(truths, rng)))
    ]  # fmt: skip


def expected_sums(qid: str, sent: list[pb.Report]) -> list[int]:
    """The tally's sums computed here from the values sent, independently of the server."""
    if qid == "yesno":
        return [sum(r.bit for r in sent)]
    if qid == "grr":
        return [int(c) for c in np.bincount([r.option_fixed for r in sent], minlength=4)]
    if qid == "oue":
        bits = [np.unpackbits(np.frombuffer(r.bits, np.uint8), bitorder="little")[:4] for r in sent]
        return [int(c) for c in np.sum(bits, axis=0)]
    spec = SPECS[qid]
    assert isinstance(spec, NumericMechanism)
    units = [int(math.ldexp(r.number, spec.unit_bits)) for r in sent]
    return [sum(units), sum(u * u for u in units)]


def run_check(run_cli: RunCli, db: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("deniable-aggregator", "check", "--db", f"sqlite:///{db}", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)  # exactly one JSON document


def questions_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (survey,) = document["surveys"]
    return {q["question_id"]: q for q in survey["questions"]}
