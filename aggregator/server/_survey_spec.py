"""A new survey from a CreateSurvey request: its spec checked, each question's privacy filled in."""

from __future__ import annotations

import secrets
import time

from deniable.aggregator.server._enrollment import check_min_reports
from deniable.aggregator.server._releases import check_release_step
from deniable.aggregator.server._texts import check_texts
from deniable.aggregator.storage import check_max_reports
from deniable.shared.errors import InvalidArgument, shown
from deniable.shared.questions import QUESTION_ID, check_question
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MAX_QUESTIONS", "MAX_TEXT", "MAX_TITLE", "new_survey"]

MAX_QUESTIONS = 100
MAX_TITLE = 200
MAX_TEXT = 2000


def new_survey(request: pb.CreateSurveyRequest) -> pb.Survey:
    """The open survey a valid request asks for, with a new id; InvalidArgument naming a field."""
    check_texts(request)
    title = request.title.strip()
    if not title or len(title) > MAX_TITLE:
        raise InvalidArgument(f"title: must be 1..{MAX_TITLE} characters, got {len(title)}")
    if not 1 <= len(request.questions) <= MAX_QUESTIONS:
        raise InvalidArgument(
            f"questions: need 1..{MAX_QUESTIONS} questions, got {len(request.questions)}"
        )
    check_min_reports(request.min_reports)
    check_release_step(request.release_step, request.enrollment_required)
    check_max_reports(request.max_reports)
    survey = pb.Survey(
        id=secrets.token_hex(8),
        title=title,
        state=pb.SURVEY_STATE_OPEN,
        created_unix_ms=time.time_ns() // 1_000_000,
        min_reports=request.min_reports,
        enrollment_required=request.enrollment_required,
        release_step=request.release_step,
        max_reports=request.max_reports,
    )
    seen: set[str] = set()
    for index, question in enumerate(request.questions):
        where = f"questions[{index}]"
        if not QUESTION_ID.fullmatch(question.id):
            raise InvalidArgument(
                f"{where}.id: {shown(question.id)} must match [A-Za-z0-9_.-]{{1,64}}"
            )
        if question.id in seen:
            raise InvalidArgument(f"{where}.id: duplicate question id {question.id!r}")
        seen.add(question.id)
        if not question.text.strip() or len(question.text) > MAX_TEXT:
            raise InvalidArgument(f"{where}.text: must be 1..{MAX_TEXT} characters")
        try:
            mechanism = check_question(question, where)
        except ValueError as error:
            raise InvalidArgument(str(error)) from None
        stored = survey.questions.add()
        stored.CopyFrom(question)
        stored.privacy.CopyFrom(
            pb.Privacy(
                epsilon=mechanism.epsilon,
                epsilon_approx=getattr(mechanism, "epsilon_approx", 0.0),
                explanation=mechanism.explain(),
            )
        )
    return survey
