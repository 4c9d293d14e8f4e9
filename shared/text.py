"""Untrusted text made safe for terminals: control and bidi characters shown as escapes."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["BIDI_CONTROLS", "describe_character", "first_unsafe", "visible"]

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f"  # ARABIC LETTER MARK, LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK
    "\u202a\u202b\u202c\u202d\u202e"  # embeddings and overrides (LRE RLE PDF LRO RLO)
    "\u2066\u2067\u2068\u2069"  # isolates (LRI RLI FSI PDI)
)
"""The Unicode bidirectional formatting characters: they reorder the text that follows."""

# C0 controls (ESC, CR, BS, LF, TAB ...), DEL and the C1 controls; the bidi controls; the
# line and paragraph separators, which some terminals treat as line breaks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + "".join(sorted(BIDI_CONTROLS)) + "]")

_NAMES = {
    "\x00": "NUL",
    "\x07": "BEL",
    "\x08": "BS",
    "\t": "TAB",
    "\n": "LF",
    "\r": "CR",
    "\x1b": "ESC",
    "\x7f": "DEL",
    "\x9b": "CSI",
}


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    r"""``text`` with every unsafe character written as a Python-style escape.

    Unsafe are the characters a terminal obeys instead of showing: C0 and C1 controls (ESC,
    CR, BS, LF, TAB ...), DEL, the Unicode bidirectional controls (U+061C, U+200E, U+200F,
    U+202A..U+202E, U+2066..U+2069) and the line and paragraph separators. Everything else,
    other scripts and emoji included, is left as it is. Use it for every string that came
    from another party before it reaches a terminal; it always gives one line.

    Example:
        >>> visible("Title\x1b[2J\u202eevil")
        'Title\\x1b[2J\\u202eevil'
    """
    return _UNSAFE.sub(_escape, text)


def describe_character(character: str) -> str:
    r"""``U+001B (ESC)``: a character's code point and its short or Unicode name.

    Example:
        >>> describe_character("\u202e")
        'U+202E (RIGHT-TO-LEFT OVERRIDE)'
    """
    code = ord(character)
    name = _NAMES.get(character) or unicodedata.name(character, "control character")
    return f"U+{code:04X} ({name})"


def first_unsafe(text: str) -> tuple[int, str] | None:
    r"""The position and character of the first unsafe character in ``text``, or None.

    Example:
        >>> first_unsafe("ok"), first_unsafe("a\rb")
        (None, (1, '\r'))
    """
    match = _UNSAFE.search(text)
    return None if match is None else (match.start(), match.group())
