"""Release steps at the daemon: their checks, the released tally, and the central (ε, δ) sent."""

from __future__ import annotations

from collections.abc import Sequence

from deniable.aggregator.storage import Tally
from deniable.shared.errors import FailedPrecondition, InvalidArgument
from deniable.shared.privacy import (
    ASSUMES,
    HOLDS_AGAINST,
    MAX_RELEASE_STEP,
    METHOD,
    CentralBound,
    ReleaseSteps,
    central_bound,
    compose,
    default_delta,
)
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = [
    "central_privacy",
    "central_steps",
    "check_central_delta",
    "check_release_step",
    "released_tally",
    "survey_central",
]


def check_release_step(value: int, enrollment_required: bool) -> None:
    """Raise InvalidArgument naming ``release_step`` unless it is 0..:data:`MAX_RELEASE_STEP`.

    A stepped survey must also require enrollment: its central ε assumes that the other
    reports of a step come from distinct admitted participants. Without tokens anyone who
    can reach the daemon can fill a step with forged reports of known values, subtract
    them from the release, and read one participant's report: the local ε is then all
    that holds, and showing a central ε would be a false promise.
    """
    if value > MAX_RELEASE_STEP:
        raise InvalidArgument(
            f"release_step: must be 0 (not stepped) or 1..{MAX_RELEASE_STEP:,} reports per "
            f"step, got {value:,}"
        )
    if value and not enrollment_required:
        raise InvalidArgument(
            "release_step: a survey released in steps shows a central ε, which holds only "
            "if the other reports of each step come from distinct admitted participants; "
            "without enrollment anyone can fill a step with forged reports and subtract "
            "them to read one participant's report. Create it with enrollment_required "
            "(one token per participant), or without release_step (only the local ε then)"
        )


def central_steps(survey: pb.Survey) -> ReleaseSteps | None:
    """The steps a central ε is claimed for: a stepped survey that requires enrollment.

    A stepped survey without enrollment (made before a step needed it) keeps its steps for
    releases, but no central ε is claimed for it: anyone could have filled its steps.
    """
    if not survey.enrollment_required:
        return None
    return ReleaseSteps.of(survey.min_reports, survey.release_step)


def check_central_delta(value: float, survey_id: str, steps: ReleaseSteps | None) -> None:
    """A requested δ (0: the default) must be in (0, 1), and the survey stepped.

    Raises:
        InvalidArgument: δ outside (0, 1), or NaN.
        FailedPrecondition: a δ asked of a survey that is not released in steps, which has
            no central (ε, δ): every estimate is from all reports, so two estimates apart
            by one report expose it, and only the local ε holds.
    """
    if value == 0.0:
        return
    if not 0.0 < value < 1.0:  # also refuses NaN
        raise InvalidArgument(f"central_delta: must be in (0, 1), got {value!r}")
    if steps is None:
        raise FailedPrecondition(
            f"central_delta: survey {survey_id!r} is not released in steps with enrollment, "
            "so only the local ε applies; a central ε needs a survey created with a "
            "release_step and enrollment_required"
        )


def released_tally(
    question_id: str, stored: Tally | None, released: Tally | None, steps: ReleaseSteps
) -> Tally:
    """The tally an estimate of a stepped question is made from: the last released one.

    ``stored``: the live tally, named in the refusal (None: not shown to this caller).

    Raises:
        FailedPrecondition: nothing is released yet (the first release is one step in
            when the survey has no release gate), naming the count it waits for.
    """
    if released is None or released.n == 0:
        so_far = "" if stored is None else f", {stored.n:,} stored so far"
        raise FailedPrecondition(
            f"question_id: question {question_id!r} is released in steps; its first release "
            f"is at {steps.first:,} reports{so_far}"
        )
    return released


def _message(bound: CentralBound) -> pb.CentralPrivacy:
    return pb.CentralPrivacy(
        epsilon=bound.epsilon,
        delta=bound.delta,
        step=bound.step,
        local_epsilon=bound.local_epsilon,
        method=METHOD,
        holds_against=HOLDS_AGAINST,
        assumes=ASSUMES,
        questions=bound.questions,
    )


def central_privacy(local_epsilon: float, steps: ReleaseSteps, delta: float) -> pb.CentralPrivacy:
    """One question's central (ε, δ): the shuffling bound for its smallest step."""
    return _message(central_bound(local_epsilon, steps, delta))


def survey_central(survey: pb.Survey, local_epsilons: Sequence[float]) -> pb.CentralPrivacy | None:
    """The central (ε, δ) of everything released about one participant, or None if unstepped.

    The default δ for the survey's stored reports is split evenly between its questions,
    and the questions compose by basic composition (their ε add up, as do their δ).
    """
    steps = central_steps(survey)
    if steps is None or not local_epsilons:
        return None
    delta = default_delta(survey.reports) / len(local_epsilons)
    return _message(compose([central_bound(e, steps, delta) for e in local_epsilons]))
