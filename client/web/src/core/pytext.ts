/** Python's text rules where answers and messages must match the CLI: strip, isdigit/int, float, repr. */

/** The characters Python's ``str.isspace`` (and so ``str.strip()``) treats as whitespace. */
const PY_SPACE = "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004" +
  "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";

/** Whether one character is whitespace to Python. */
export function pyIsSpace(char: string): boolean {
  return char.length === 1 && PY_SPACE.includes(char);
}

/** Python's ``text.strip()``: JavaScript's ``trim`` differs (U+FEFF, U+001C..U+001F, U+0085). */
export function pyStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && pyIsSpace(text[start]!)) start++;
  while (end > start && pyIsSpace(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/** Python's ``len(text)``: code points, not UTF-16 units. */
export function pyLen(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

const DECIMALS = /^\p{Nd}+$/u;
const DECIMAL = /\p{Nd}/u;

/** A decimal digit's value: Unicode's Nd digits come in runs of ten, starting at zero. */
function digitValue(char: string): number {
  let code = char.codePointAt(0)!;
  let start = code;
  while (DECIMAL.test(String.fromCodePoint(start - 1))) start--;
  code -= start;
  return code % 10;
}

/**
 * ``int(text)`` where Python's ``text.isdigit()`` holds and ``int`` accepts it: a run of
 * Unicode decimal digits (Python reads "٣" as 3), at most 4,300 of them (Python's limit).
 * Null for anything else: the CLI refuses those (superscripts pass ``isdigit`` but not ``int``).
 */
export function pyDigits(text: string): bigint | null {
  if (!DECIMALS.test(text) || pyLen(text) > 4300) return null;
  let value = 0n;
  for (const char of text) value = value * 10n + BigInt(digitValue(char));
  return value;
}

const DIGITS = String.raw`\d(?:_?\d)*`; // Python's digitpart: underscores only between digits
const MANTISSA = String.raw`(?:${DIGITS}(?:\.(?:${DIGITS})?)?|\.${DIGITS})`; // "1", "1.", "1.5", ".5"
const FLOAT_NUMBER = new RegExp(String.raw`^[+-]?${MANTISSA}(?:[eE][+-]?${DIGITS})?$`);
const FLOAT_SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;

/**
 * Python's ``float(text)``: Unicode digits and spaces as ASCII first, then the decimal
 * grammar with single underscores between digits, or inf/infinity/nan; NaN where Python
 * raises ValueError (JavaScript's ``Number`` also takes hex, "" and "Infinity" only).
 */
export function pyFloat(text: string): number {
  let ascii = "";
  for (const char of text) {
    if (pyIsSpace(char)) ascii += " ";
    else if (DECIMAL.test(char)) ascii += String(digitValue(char));
    else ascii += char;
  }
  const value = ascii.replace(/^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g, "");
  if (FLOAT_SPECIAL.test(value)) {
    const negative = value.startsWith("-");
    return /nan/i.test(value) ? NaN : negative ? -Infinity : Infinity;
  }
  if (!FLOAT_NUMBER.test(value)) return NaN;
  return Number(value.replaceAll("_", ""));
}

/** Python's ``repr`` of a float: shortest digits, fixed from 1e-4 up to 1e16, else ``1e+16``. */
export function reprFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = x.toExponential().split("e") as [string, string];
  const exponent = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let body: string;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) body = `0.${"0".repeat(-exponent - 1)}${digits}`;
    else if (digits.length > exponent + 1) {
      body = `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
    } else body = `${digits}${"0".repeat(exponent + 1 - digits.length)}.0`;
  } else {
    const lead = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const size = String(Math.abs(exponent)).padStart(2, "0");
    body = `${lead}e${exponent < 0 ? "-" : "+"}${size}`;
  }
  return negative ? `-${body}` : body;
}

const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python's ``repr`` of a str: quotes chosen as Python does, unprintable characters escaped. */
export function reprStr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === quote || char === "\\") out += `\\${char}`;
    else if (char === "\t") out += "\\t";
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (char !== " " && UNPRINTABLE.test(char)) {
      const hex = code.toString(16);
      out += code < 0x100 ? `\\x${hex.padStart(2, "0")}`
        : code < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
    } else out += char;
  }
  return out + quote;
}

/** An integer with thousands separators, as Python's ``f"{n:,}"``. */
export function withCommas(n: number | bigint): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Python's ``shown``: the repr, cut to 40 characters with the length noted. */
export function shown(value: string): string {
  const chars = [...value];
  if (chars.length <= 40) return reprStr(value);
  return `${reprStr(chars.slice(0, 40).join(""))}... (${withCommas(chars.length)} characters)`;
}
