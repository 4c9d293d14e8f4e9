"""The aggregator's service layer: validation and rules, independent of the transport."""

from __future__ import annotations

import threading
from collections.abc import Generator
from concurrent.futures import Executor, Future

from deniable.aggregator.server._enrollment import (
    check_token_batch,
    check_token_count,
    gate_message,
    new_tokens,
    token_hash,
)
from deniable.aggregator.server._export import ExportSlots, export_chunks
from deniable.aggregator.server._ingest import GroupChecks, PreparedBatch, find_question
from deniable.aggregator.server._releases import (
    central_privacy,
    central_steps,
    check_central_delta,
    released_tally,
    survey_central,
)
from deniable.aggregator.server._survey_spec import MAX_QUESTIONS, new_survey
from deniable.aggregator.server._views import check_listing, public_view
from deniable.aggregator.storage import Storage, Submission, SubmitOutcome
from deniable.aggregator.storage.codec import decode_batch
from deniable.shared.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    shown,
)
from deniable.shared.mechanisms import (
    Mechanism,
    Tally,
    mechanism_of,
)
from deniable.shared.privacy import ReleaseSteps, default_delta
from deniable.shared.questions import SURVEY_ID, question_type
from deniable.shared.stats import MAX_CONFIDENCE, METHODS
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_BATCH", "MAX_QUESTIONS", "AggregatorService", "PreparedBatch"]

MAX_BATCH = 10_000


class AggregatorService:
    """Surveys, report ingestion and estimates over a :class:`Storage` backend."""

    def __init__(
        self,
        storage: Storage,
        *,
        max_batch: int = MAX_BATCH,
        max_message_bytes: int | None = None,
    ) -> None:
        self.storage = storage
        self.max_batch = max_batch
        self.max_message_bytes = max_message_bytes  # the largest reply (None: no limit)
        self._specs: dict[str, pb.Survey] = {}  # open surveys' specs, read once
        self._mechanisms: dict[tuple[str, str], Mechanism] = {}
        self._groups = GroupChecks(storage, self._survey, self._mechanism, self._specs)
        # One batch is decoded at a time: the decoder is a few dozen numpy calls that each
        # let go of the interpreter, and concurrent decoders then pass it back and forth
        # (futex wake-ups, cold caches) instead of getting on with their work.
        self._decoding = threading.Lock()
        self._exports = ExportSlots()

    def create_survey(self, request: pb.CreateSurveyRequest) -> pb.Survey:
        """Validate a survey spec, fill in each question's privacy figures, store it."""
        survey = new_survey(request)
        self.storage.create_survey(survey)
        return self.get_survey(survey.id, admin=True)

    def get_survey(self, survey_id: str, *, admin: bool = False) -> pb.Survey:
        """The survey with its central (ε, δ) when it is stepped, or NotFound.

        ``admin``: the caller holds the admin token; without it a stepped survey's live
        report count is withheld (:func:`public_view`).
        """
        survey = self._survey(survey_id)
        return self._with_central(survey if admin else public_view(survey, self.storage))

    def _survey(self, survey_id: str) -> pb.Survey:
        """The survey as stored, or NotFound."""
        survey = self.storage.get_survey(survey_id) if SURVEY_ID.fullmatch(survey_id) else None
        if survey is None:
            raise NotFound(f"survey_id: unknown survey {shown(survey_id)}")
        return survey

    def _spec(self, survey_id: str) -> pb.Survey:
        """The survey as stored, kept for its spec: NotFound if there is no such survey."""
        survey = self._specs[survey_id] = self._survey(survey_id)
        return survey

    def _with_central(self, survey: pb.Survey) -> pb.Survey:
        """Fill in ``Survey.central`` (composed over the questions) for a stepped survey."""
        mechanisms = [self._mechanism(survey.id, question) for question in survey.questions]
        central = survey_central(survey, [m.epsilon for m in mechanisms])
        if central is not None:
            survey.central.CopyFrom(central)
        return survey

    def list_surveys(
        self, request: pb.ListSurveysRequest, *, admin: bool = False
    ) -> pb.ListSurveysResponse:
        """Open surveys, or all with ``include_closed`` (admin only: Unauthenticated).

        ``admin``: the caller holds the admin token; without it stepped surveys' live
        report counts are withheld (:func:`public_view`).
        """
        check_listing(request.include_closed, admin)
        surveys = self.storage.list_surveys(request.include_closed)
        if not admin:
            surveys = [public_view(survey, self.storage) for survey in surveys]
        return pb.ListSurveysResponse(surveys=[self._with_central(s) for s in surveys])

    def close_survey(self, survey_id: str) -> pb.Survey:
        """Close a survey; closing a closed survey is a no-op."""
        self._survey(survey_id)
        closed = self.storage.close_survey(survey_id)
        assert closed is not None
        return self._with_central(closed)

    def submit_reports(self, request: pb.SubmitReportsRequest | bytes) -> pb.SubmitReportsResponse:
        """Validate every report, then store the batch in one durable transaction.

        ``request`` may be the serialized message as received on the wire: the server
        hands over raw bytes so that a well-formed batch is validated in bulk. A batch
        with an ``enrollment_token`` holds one survey's reports, one per question; the
        storage checks the token and its earlier answers in the batch's transaction.
        """
        data = request if isinstance(request, bytes) else request.SerializeToString()
        with self._decoding:
            prepared = self.prepare_reports(data)
        return prepared.response(self.storage.submit(prepared.submission))

    def prepare_reports(self, data: bytes) -> PreparedBatch:
        """Decode and validate a serialized batch against its surveys: what to store.

        Nothing is stored; :meth:`store_reports` (or the storage's ``submit``) does that,
        and checks in the batch's transaction what can change meanwhile (a survey closed,
        an id stored, a token used). Concurrent callers may prepare batches at once.

        Raises:
            InvalidArgument, NotFound, FailedPrecondition, Unauthenticated,
            ResourceExhausted: the batch is refused as a whole (naming the report).
        """
        batch = decode_batch(data, self.max_batch)
        token = batch.enrollment_token
        if token:
            check_token_batch(batch.groups, batch.positions)
        groups = [self._groups.check(group, batch.positions, bool(token)) for group in batch.groups]
        submission = Submission(
            batch.report_ids,
            batch.payloads,
            groups,
            batch.encode,
            batch.positions,
            token_hash(token) if token else None,
        )
        # Identical repeats inside the batch were dropped when decoding: counted once.
        return PreparedBatch(submission, batch.size - len(batch.report_ids))

    def store_reports(
        self, prepared: PreparedBatch, executor: Executor, *, alone: bool = False
    ) -> Future[SubmitOutcome]:
        """Store a prepared batch; a future of the outcome, resolved once it is durable.

        The caller (an event loop) awaits it, then answers with
        :meth:`PreparedBatch.response`. A backend without a committer thread of its own
        runs the commit on ``executor``. ``alone``: no other batch is on its way (see
        :meth:`Storage.submit_async`).
        """
        return self.storage.submit_async(prepared.submission, executor, alone=alone)

    def _mechanism(self, survey_id: str, question: pb.Question) -> Mechanism:
        """The question's mechanism (validated when the survey was created), cached."""
        key = (survey_id, question.id)
        mechanism = self._mechanisms.get(key)
        if mechanism is None:
            mechanism = self._mechanisms[key] = mechanism_of(question)
        return mechanism

    def issue_tokens(self, request: pb.IssueTokensRequest) -> pb.IssueTokensResponse:
        """New enrollment tokens for an open survey that requires enrollment.

        Only the tokens' hashes are stored, durably, before the reply: the response is the
        only place the tokens ever appear.
        """
        check_token_count(request.count)
        survey = self._survey(request.survey_id)
        if survey.state != pb.SURVEY_STATE_OPEN:
            raise FailedPrecondition(f"survey_id: survey {survey.id!r} is closed")
        if not survey.enrollment_required:
            raise FailedPrecondition(
                f"survey_id: survey {survey.id!r} does not require enrollment; tokens are "
                "issued only for surveys created with enrollment_required"
            )
        tokens = new_tokens(request.count)
        self.storage.issue_tokens(survey.id, [token_hash(token) for token in tokens])
        return pb.IssueTokensResponse(survey_id=survey.id, tokens=tokens)

    def export_reports(self, survey_id: str) -> Generator[bytes, None, None]:
        """A survey's stored reports as serialized ``ExportReportsResponse`` chunks.

        Checks the survey (NotFound) at once; the log is read only as chunks are asked
        for, each chunk holding whole stored batches (see :func:`export_chunks`), up to
        the last batch committed when the first chunk is read. At most
        :data:`~deniable.aggregator.server._export.MAX_EXPORTS` run at once: the next is
        refused with ResourceExhausted at its first read.
        """
        survey = self._survey(survey_id)
        rows = self.storage.log(survey.id)
        chunks = export_chunks(rows, survey.id, max_message_bytes=self.max_message_bytes)
        return self._exports.held(chunks, survey.id)

    def get_estimate(self, request: pb.GetEstimateRequest, *, admin: bool = False) -> pb.Estimate:
        """O(1) estimate from the question's running tally, or its last release if stepped.

        The survey's spec (its questions, gate and steps, which never change) is read once
        and cached; each estimate reads the question's tally (and release) only. ``admin``:
        the caller holds the admin token; without it a stepped question's live count is
        not shown (``stored`` is the released count, ``stored_as_released`` set, and the
        refusals before the first release name no count).
        """
        survey = self._specs.get(request.survey_id) or self._spec(request.survey_id)
        question = find_question(survey, request.question_id, "question_id")
        confidence = request.confidence or 0.95
        if not 0.0 < confidence <= MAX_CONFIDENCE:  # also refuses NaN
            raise InvalidArgument(
                f"confidence: must be in (0, {MAX_CONFIDENCE!r}] (at most 1 - 1e-9), "
                f"got {confidence!r}"
            )
        method = request.method or "clopper-pearson"
        if method not in METHODS:
            raise InvalidArgument(
                f"method: unknown method {shown(method)}; expected one of: {', '.join(METHODS)}"
            )
        qtype = question_type(str(question.WhichOneof("kind")))
        pair = None
        if request.given or request.item:
            try:
                pair = qtype.given_pair(question, request.given, request.item)
            except ValueError as error:
                raise InvalidArgument(str(error)) from None
        steps = ReleaseSteps.of(survey.min_reports, survey.release_step)
        central = central_steps(survey)
        check_central_delta(request.central_delta, survey.id, central)
        # The release first: a batch committed between the two reads only adds to the tally.
        released = self.storage.released(survey.id, question.id) if steps else None
        tally = self.storage.tally(survey.id, request.question_id)
        assert tally is not None
        live = admin or steps is None  # may the caller see the live count?
        if live and tally.n < survey.min_reports:  # the release gate (the first step if stepped)
            raise FailedPrecondition(gate_message(question.id, tally.n, survey.min_reports))
        shown_tally = (
            tally
            if steps is None
            else released_tally(question.id, tally if live else None, released, steps)
        )
        if tally.n == 0:
            raise FailedPrecondition(
                f"question_id: no reports yet for question {shown(request.question_id)}"
            )
        mechanism = self._mechanism(survey.id, question)
        estimate = mechanism.estimate(
            Tally(shown_tally.n, shown_tally.sums),
            confidence,
            method,
            simultaneous=request.simultaneous,
            anytime=request.anytime,
        )
        fields = {"mechanism": mechanism.name, **estimate.wire_fields(question)}
        if pair is not None:
            shown_as = Tally(shown_tally.n, shown_tally.sums)
            fields["conditional"] = qtype.conditional(
                question, mechanism, shown_as, pair, confidence
            )
        result = pb.Estimate(
            survey_id=survey.id,
            question_id=request.question_id,
            stored=tally.n if live else shown_tally.n,
            stored_as_released=not live,
            **fields,
        )
        question_type(str(question.WhichOneof("kind"))).complete_estimate(
            question, mechanism, result, simultaneous=request.simultaneous
        )
        if steps is not None:
            result.next_release_at = steps.next_at(shown_tally.n)
        if central is not None:
            delta = request.central_delta or default_delta(shown_tally.n)
            result.central.CopyFrom(central_privacy(mechanism.epsilon, central, delta))
        return result
