/** Untrusted text: the characters the CLI escapes and the daemon refuses (control, bidi). */

/** The Unicode bidirectional formatting characters: they reorder the text that follows. */
const BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069";

// C0 controls, DEL and the C1 controls; the bidi controls; the line and paragraph
// separators (Python's deniable.shared.text._UNSAFE).
const UNSAFE = new RegExp(`[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029${BIDI}]`, "u");
const UNSAFE_ALL = new RegExp(UNSAFE.source, "gu");

const NAMES: Record<string, string> = {
  "\x00": "NUL",
  "\x07": "BEL",
  "\x08": "BS",
  "\t": "TAB",
  "\n": "LF",
  "\r": "CR",
  "\x1b": "ESC",
  "\x7f": "DEL",
  "\x9b": "CSI",
  "\u061c": "ARABIC LETTER MARK",
  "\u200e": "LEFT-TO-RIGHT MARK",
  "\u200f": "RIGHT-TO-LEFT MARK",
  "\u202a": "LEFT-TO-RIGHT EMBEDDING",
  "\u202b": "RIGHT-TO-LEFT EMBEDDING",
  "\u202c": "POP DIRECTIONAL FORMATTING",
  "\u202d": "LEFT-TO-RIGHT OVERRIDE",
  "\u202e": "RIGHT-TO-LEFT OVERRIDE",
  "\u2066": "LEFT-TO-RIGHT ISOLATE",
  "\u2067": "RIGHT-TO-LEFT ISOLATE",
  "\u2068": "FIRST STRONG ISOLATE",
  "\u2069": "POP DIRECTIONAL ISOLATE",
  "\u2028": "LINE SEPARATOR",
  "\u2029": "PARAGRAPH SEPARATOR",
};

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

/** ``text`` with every unsafe character written as a Python-style escape (``visible``). */
export function visible(text: string): string {
  return text.replace(UNSAFE_ALL, (character) => {
    const code = character.codePointAt(0)!;
    return code < 0x100 ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  });
}

/** The position (in code points, as Python counts) and character of the first unsafe one. */
export function firstUnsafe(text: string): { position: number; character: string } | null {
  const match = UNSAFE.exec(text);
  if (match === null) return null;
  return { position: [...text.slice(0, match.index)].length, character: match[0] };
}

/** ``U+001B (ESC)``: a character's code point and its short or Unicode name. */
export function describeCharacter(character: string): string {
  const code = character.codePointAt(0)!;
  const name = NAMES[character] ?? "control character";
  return `U+${hex(code, 4).toUpperCase()} (${name})`;
}
