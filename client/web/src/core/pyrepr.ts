/** Python's ``repr`` of floats and strings, so that messages read exactly as the Python client's. */

/**
 * ``repr(x)`` of a Python float: the shortest digits that round-trip, in positional form
 * from 1e-4 to below 1e16 (with ``.0`` when whole), else ``1.5e-07``, ``1e+16``.
 */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const [mantissa, power] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exponent = Number(power);
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const size = Math.abs(exponent);
    return `${sign}${head}e${exponent < 0 ? "-" : "+"}${size < 10 ? "0" : ""}${size}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction || "0"}`;
}

const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** ``repr(s)`` of a Python string: single quotes unless it holds ' and no ", escapes as Python. */
export function pyStr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === quote) out += `\\${quote}`;
    else if (ESCAPES[char] !== undefined) out += ESCAPES[char];
    else if (char !== " " && HIDDEN.test(char)) {
      const hex = code.toString(16);
      if (code < 0x100) out += `\\x${hex.padStart(2, "0")}`;
      else if (code < 0x10000) out += `\\u${hex.padStart(4, "0")}`;
      else out += `\\U${hex.padStart(8, "0")}`;
    } else out += char;
  }
  return out + quote;
}
