"""Survey texts are shown in participants' terminals: refuse control characters in any of them."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from deniable.shared.errors import InvalidArgument
from deniable.shared.text import describe_character, first_unsafe

__all__ = ["check_texts"]


def _strings(message: Message, path: str) -> list[tuple[str, str]]:
    """Every string set in ``message``, nested messages included, with its field path."""
    found: list[tuple[str, str]] = []
    for field, value in message.ListFields():
        where = f"{path}.{field.name}" if path else field.name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            for key, item in value.items():  # a map: its keys and its string values
                found.append((f"{where} key", str(key)))
                if isinstance(item, Message):
                    found.extend(_strings(item, f"{where}[{key!r}]"))
                elif isinstance(item, str):
                    found.append((f"{where}[{key!r}]", item))
            continue
        for index, item in enumerate(value) if field.is_repeated else [(-1, value)]:
            at = where if index < 0 else f"{where}[{index}]"
            if field.type == FieldDescriptor.TYPE_STRING:
                found.append((at, item))
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                found.extend(_strings(item, at))
    return found


def check_texts(message: Message) -> None:
    """Refuse a request with a control character or bidi override in any string field.

    Titles, question texts and option labels are printed in participants' terminals,
    where ESC, CR or BS could rewrite the lines that show the privacy cost, and a bidi
    override could reverse what is read. The participant's tools show such characters as
    escapes anyway (:func:`deniable.shared.text.visible`); the daemon refuses to store them.

    Raises:
        InvalidArgument: naming the field, the character and its position.
    """
    for where, text in _strings(message, ""):
        unsafe = first_unsafe(text)
        if unsafe is not None:
            position, character = unsafe
            raise InvalidArgument(
                f"{where}: contains {describe_character(character)} at position {position}; "
                "survey texts may not hold control characters, line breaks or bidirectional "
                "overrides, since they could rewrite what participants see in a terminal"
            )
