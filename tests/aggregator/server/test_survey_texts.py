"""Survey creation refuses control characters and bidi overrides in every text, naming the field."""

from __future__ import annotations

import grpc
import pytest

from deniable.client._remote import AggregatorClient, RemoteError
from deniable.shared.wire.v1 import aggregator_pb2 as pb
from tests.conftest import binary_question

UNSAFE = ["\x1b[2J", "\r", "\x08", "\n", "\t", "\x00", "\x7f", "\x9b", "\u202e", "\u2066", "\u2028"]


def categorical(qid: str, options: list[str]) -> pb.Question:
    return pb.Question(
        id=qid,
        text="Pick one",
        categorical=pb.CategoricalQuestion(options=options),
        mechanism=pb.Mechanism(grr=pb.GeneralizedRandomizedResponse(alpha=0.5)),
    )


def survey_with(field: str, bad: str) -> tuple[str, list[pb.Question]]:
    """A valid survey except for ``bad`` inside ``field``."""
    title, yes_no, options = "Exam", binary_question("cheated"), ["red", "green", "blue"]
    if field == "title":
        title = f"Ex{bad}am"
    elif field == "questions[0].text":
        yes_no.text = f"Did you{bad} cheat?"
    elif field == "questions[1].categorical.options[2]":
        options[2] = f"bl{bad}ue"
    return title, [yes_no, categorical("colour", options)]


FIELDS = ["title", "questions[0].text", "questions[1].categorical.options[2]"]


@pytest.mark.parametrize("bad", UNSAFE, ids=[f"U+{ord(b[0]):04X}" for b in UNSAFE])
@pytest.mark.parametrize("field", FIELDS)
def test_unsafe_characters_are_refused_naming_the_field(
    admin: AggregatorClient, field: str, bad: str
) -> None:
    title, questions = survey_with(field, bad)
    with pytest.raises(RemoteError) as caught:
        admin.create_survey(title, questions)
    assert caught.value.status == grpc.StatusCode.INVALID_ARGUMENT
    details = caught.value.details
    assert details.startswith(f"{field}: contains U+{ord(bad[0]):04X} (")
    position = {"title": 2, "questions[0].text": 7}.get(field, 2)
    assert f"at position {position};" in details
    assert admin.list_surveys(include_closed=True) == []


def test_other_scripts_and_emoji_are_kept(admin: AggregatorClient) -> None:
    title = "Prüfung 試験 امتحان 👨‍👩‍👧"  # the family emoji joins with U+200D: not a control
    created = admin.create_survey(title, [categorical("c", ["ja", "nein", "🤷"])])
    assert created.title == title
    assert list(created.questions[0].categorical.options) == ["ja", "nein", "🤷"]


def test_a_map_key_of_a_registered_mechanism_is_checked_too(admin: AggregatorClient) -> None:
    question = binary_question("q")
    question.mechanism.registered.name = "custom"
    question.mechanism.registered.parameters["eps\x1b[2Jilon"] = 1.0
    with pytest.raises(RemoteError) as caught:
        admin.create_survey("Exam", [question])
    assert caught.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details.startswith(
        "questions[0].mechanism.registered.parameters key: contains U+001B (ESC) at position 3"
    )
    assert admin.list_surveys(include_closed=True) == []
