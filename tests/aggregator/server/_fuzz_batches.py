"""SubmitReports batches for the fuzz suite: valid reports with fresh ids, and flawed ones."""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.message import Message
from hypothesis import strategies as st

from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.aggregator.server import _fuzz_strategies as fs
from tests.aggregator.server._fuzz_env import Env, survey_request

BINARY = fs.VALID_MECHANISMS["binary"][0]

FLAWS = [
    "wrong-member",
    "out-of-domain",
    "finite-number",
    "unknown-survey",
    "unknown-question",
    "mechanism",
    "missing",
    "report-id",
    "closed",
    "enrolled",
    "conflict",
    "repeat",
    "stored-conflict",
    "stored-repeat",
]


@dataclass
class Batch:
    """Reports to submit; which are valid on their own; whether the batch must be refused."""

    reports: list[pb.Report] = field(default_factory=list)
    good: list[pb.Report] = field(default_factory=list)
    refused: bool = False  # certainly invalid
    unsure: bool = False  # maybe valid, maybe not (a random number, an unknown token policy)
    token: str = ""


def _flaw(draw: st.DrawFn, env: Env, batch: Batch, flaw: str) -> pb.Report | None:
    """A report with ``flaw``; sets ``batch.refused``/``unsure``; None if it does not apply."""
    target = draw(st.sampled_from(env.targets["open"]))
    report = target.report(next(env.ids), draw(st.integers(0, 39)))
    kind = str(target.question.mechanism.WhichOneof("kind"))
    if flaw == "finite-number" and kind in fs.MECHANISMS_FOR["numeric"]:
        report.number, batch.unsure = draw(st.floats(allow_nan=False, allow_infinity=False)), True
        return report
    if flaw in ("closed", "enrolled"):
        retarget = draw(st.sampled_from(env.targets[flaw]))
        report = retarget.report(report.report_id, draw(st.integers(0, 39)))
        enforced = flaw == "closed" or env.surveys["enrolled"].enrollment_required
        batch.refused |= enforced
        batch.unsure |= not enforced
        return report
    if flaw in ("conflict", "repeat", "stored-conflict", "stored-repeat"):
        if flaw.startswith("stored"):  # an id stored by an earlier batch
            original = env.stored[draw(st.sampled_from(sorted(env.stored)))]
        elif batch.good:  # an id earlier in this batch
            original = draw(st.sampled_from(batch.good))
        else:
            return None
        if flaw.endswith("repeat"):
            return original  # an identical resend: acknowledged, counted once
        same = [
            t
            for t in env.targets["open"]
            if t.question.id == original.question_id and t.survey_id == original.survey_id
        ]
        report = same[0].report(original.report_id, draw(st.integers(0, 39)))
        batch.refused |= report != original  # the same id with other content
        return report
    batch.refused = True
    if flaw == "wrong-member" or (flaw == "out-of-domain" and kind == "randomized_response"):
        report.ClearField("value")
        report.MergeFrom(pb.Report(**draw(fs.wrong_members(fs.VALUE_FOR[kind]))))
    elif flaw == "out-of-domain":
        report.ClearField("value")
        report.MergeFrom(pb.Report(**draw(fs.out_of_domain(kind))))
    elif flaw == "unknown-survey":
        report.survey_id = draw(fs.strings.filter(lambda s: s not in env.known_ids()))
    elif flaw == "unknown-question":
        report.question_id = draw(fs.strings.filter(lambda q: q != target.question.id))
    elif flaw == "mechanism":
        report.mechanism.CopyFrom(
            draw(fs.mechanisms.filter(lambda m: m != target.question.mechanism))
        )
    elif flaw == "missing":
        report.ClearField(
            draw(st.sampled_from(["report_id", "survey_id", "question_id", "mechanism", "value"]))
        )
    else:  # report-id
        report.report_id = draw(st.sampled_from(fs.BAD_IDS))
    return report


@st.composite
def batches(draw: st.DrawFn, env: Env, max_flaws: int = 3) -> Batch:
    """Valid reports of every kind with fresh ids, and up to ``max_flaws`` flawed ones."""
    batch = Batch()
    for _ in range(draw(st.integers(0, 8))):
        target = draw(st.sampled_from(env.targets["open"]))
        batch.good.append(target.report(next(env.ids), draw(st.integers(0, 39))))
    batch.reports = list(batch.good)
    for _ in range(draw(st.integers(0, max_flaws))):
        flawed = _flaw(draw, env, batch, draw(st.sampled_from(FLAWS)))
        if flawed is not None:
            batch.reports.insert(draw(st.integers(0, len(batch.reports))), flawed)
    if draw(st.integers(0, 4)) == 0:
        batch.token = draw(fs.strings)
        batch.unsure |= bool(batch.token)
    batch.refused |= not batch.reports
    return batch


def distinct(reports: list[pb.Report]) -> dict[str, pb.Report]:
    """Each report id once (the last report with that id)."""
    return {r.report_id: r for r in reports}


def valid_request(env: Env, method: str, data: st.DataObject) -> Message:
    """A valid request for ``method`` that is safe to repeat (no open survey gets closed)."""
    if method == "SubmitReports":  # one question (the fast path's shape) or several
        targets = env.targets["open"][:1] if data.draw(st.booleans()) else env.targets["open"]
        chosen = data.draw(st.lists(st.sampled_from(targets), min_size=1, max_size=4))
        return pb.SubmitReportsRequest(
            reports=[t.report(next(env.ids), i) for i, t in enumerate(chosen)]
        )
    yesno = env.surveys["yesno"]
    return {
        "CreateSurvey": survey_request("Wire", [("binary", BINARY)]),
        "GetSurvey": pb.GetSurveyRequest(survey_id=yesno.id),
        "ListSurveys": pb.ListSurveysRequest(include_closed=True),
        "CloseSurvey": pb.CloseSurveyRequest(survey_id=env.surveys["closed"].id),
        "GetEstimate": pb.GetEstimateRequest(
            survey_id=yesno.id, question_id=yesno.questions[0].id, confidence=0.9, method="wilson"
        ),
        "IssueTokens": pb.IssueTokensRequest(survey_id=env.surveys["enrolled"].id, count=2),
        "ExportReports": pb.ExportReportsRequest(survey_id=env.surveys["gated"].id),
    }[method]
