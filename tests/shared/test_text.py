"""visible() shows every control and bidi character as an escape and leaves other text alone."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from deniable.shared.text import describe_character, first_unsafe, visible

EXPLICIT_BIDI = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}
MARKS = {"\u061c", "\u200e", "\u200f"}  # ALM, LRM, RLM: bidi controls of an implicit class


def unsafe_by_unicode(character: str) -> bool:
    """The definition, from the Unicode database rather than the module's table."""
    return (
        unicodedata.category(character) in ("Cc", "Zl", "Zp")
        or unicodedata.bidirectional(character) in EXPLICIT_BIDI
        or character in MARKS
    )


def test_every_code_point_is_classified_as_the_unicode_database_says() -> None:
    wrong = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if (first_unsafe(chr(code)) is not None) != unsafe_by_unicode(chr(code))
    ]
    assert wrong == []


@given(st.text())
def test_visible_text_holds_no_unsafe_character_and_keeps_the_rest(text: str) -> None:
    shown = visible(text)
    assert first_unsafe(shown) is None
    assert shown == "".join(visible(c) for c in text)  # character by character
    safe = "".join(c for c in text if not unsafe_by_unicode(c))
    assert visible(safe) == safe


def test_escapes_are_readable_and_one_line() -> None:
    assert visible("a\x1b[2Jb\rc\x08d\ne\u202ef\x9b") == "a\\x1b[2Jb\\x0dc\\x08d\\x0ae\\u202ef\\x9b"
    assert first_unsafe("safe: Prüfung 試験 👨‍👩‍👧") is None
    assert first_unsafe("ab\u2066c") == (2, "\u2066")


def test_characters_are_described_by_code_point_and_name() -> None:
    assert describe_character("\x1b") == "U+001B (ESC)"
    assert describe_character("\x85") == "U+0085 (control character)"
    assert describe_character("\u2067") == "U+2067 (RIGHT-TO-LEFT ISOLATE)"
