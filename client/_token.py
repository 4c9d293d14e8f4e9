"""The participant's enrollment token: reading it, and what a survey or aggregator says of it.

A token is a secret handed out by the survey's organizer. It only travels in the
``SubmitReports`` request: it never goes into the ledger, the memo or any message.
"""

from __future__ import annotations

import re
from pathlib import Path

from deniable.client._errors import AuthError, InvalidAnswerError, ParticipantError, RefusedError
from deniable.shared.errors import RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "TokenError",
    "check_enrollment",
    "read_enrollment_token",
    "refused_with_token",
]

_TOKEN = re.compile(r"[!-~]{1,512}")  # one line of visible ASCII
_NOT_SENT = "nothing was sent or charged"


class TokenError(AuthError):
    """A missing or refused enrollment token (exit code 6, as for UNAUTHENTICATED)."""


def read_enrollment_token(
    token: str | None, token_file: Path | None, token_source: str = "--token"
) -> str | None:
    """The token from ``--token`` or ``--token-file`` (stripped), or None if neither.

    ``token_source`` names where ``token`` came from, for the error when both are given.
    The token itself never appears in an error message.

    Raises:
        InvalidAnswerError: both given, an unreadable or empty file, or not one line of
            visible ASCII (exit code 2).
    """
    if token is not None and token_file is not None:
        raise InvalidAnswerError(
            f"{token_source} and --token-file are mutually exclusive; give one of them"
        )
    source = token_source
    if token_file is not None:
        source = f"--token-file {token_file}"
        try:
            token = token_file.read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidAnswerError(f"{source}: cannot read it ({error.strerror})") from None
        except UnicodeDecodeError:
            raise InvalidAnswerError(f"{source}: not UTF-8 text") from None
    if token is None:
        return None
    token = token.strip()
    if not token:
        raise InvalidAnswerError(f"{source}: the enrollment token is empty")
    if not _TOKEN.fullmatch(token):
        raise InvalidAnswerError(
            f"{source}: not an enrollment token (expected one line of visible ASCII "
            "characters, no spaces)"
        )
    return token


def check_enrollment(survey: pb.Survey, token: str | None) -> None:
    """Refuse, before anything is charged or sent, a token the survey does not expect.

    Raises:
        TokenError: the survey requires enrollment and no token was given (exit code 6).
        InvalidAnswerError: a token for a survey without enrollment (exit code 2).
    """
    if survey.enrollment_required and token is None:
        raise TokenError(
            f"survey {survey.id!r} requires an enrollment token: pass the one its organizer "
            f"gave you with --token TOKEN or --token-file FILE (or DENIABLE_TOKEN); {_NOT_SENT}"
        )
    if token is not None and not survey.enrollment_required:
        raise InvalidAnswerError(
            f"survey {survey.id!r} does not use enrollment tokens, so a token would not "
            f"protect anything: answer without --token/--token-file/DENIABLE_TOKEN; "
            f"{_NOT_SENT}"
        )


def refused_with_token(error: RemoteError, survey_id: str) -> ParticipantError | None:
    """The participant's error for a token-related refusal of ``SubmitReports``, or None.

    ALREADY_EXISTS: the token already answered a question with another answer (exit 5).
    UNAUTHENTICATED: the aggregator does not know the token for this survey (exit 6).
    """
    if error.code == "ALREADY_EXISTS":
        return RefusedError(
            f"this enrollment token already answered a question of survey {survey_id!r} with "
            "a different answer; the aggregator keeps the first answer and stored nothing "
            "new. The new reports reached it, so their epsilon stays charged in your ledger "
            f"(aggregator: {error.details})"
        )
    if error.code == "UNAUTHENTICATED":
        return TokenError(
            f"the aggregator refused the enrollment token for survey {survey_id!r} "
            f"({error.details}); check that it is the token you were given for this survey"
        )
    return None
