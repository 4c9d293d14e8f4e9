/** Numbers as the Python client computes and writes them: float(Fraction), fsum, repr, .2f, .0%, g. */

import { Fraction } from "../index";

const ZERO = Fraction.of(0);

/** The number of bits of a non-negative integer (Python's ``int.bit_length``). */
function bitLength(x: bigint): number {
  return x === 0n ? 0 : x.toString(2).length;
}

/** 10^n as a BigInt. */
function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** n/d rounded to an integer, ties to even (Python's ``round`` and string formatting). */
export function roundHalfEven(value: Fraction): bigint {
  const { n, d } = value;
  let q = n / d;
  let r = n % d;
  if (r < 0n) {
    q -= 1n; // floor for negative values
    r += d;
  }
  const twice = 2n * r;
  if (twice > d || (twice === d && q % 2n !== 0n)) q += 1n;
  return q;
}

function special(x: number): string | null {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  return null;
}

function negative(x: number): boolean {
  return x < 0 || Object.is(x, -0);
}

/** Python's ``format(x, ".Nf")``: the double's exact value to N decimals, ties to even. */
export function fixed(x: number, digits: number): string {
  const odd = special(x);
  if (odd !== null) return odd;
  const scaled = roundHalfEven(Fraction.fromDouble(Math.abs(x)).mul(new Fraction(pow10(digits))));
  let text = scaled.toString().padStart(digits + 1, "0");
  if (digits > 0) text = `${text.slice(0, -digits)}.${text.slice(-digits)}`;
  return negative(x) ? `-${text}` : text;
}

/** Python's ``format(x, ".N%")``: x times 100 (in double arithmetic), fixed, then "%". */
export function percentOf(x: number, digits = 0): string {
  return `${fixed(x * 100, digits)}%`;
}

/** The position of a positive rational's leading decimal digit: v in [10^e, 10^(e+1)). */
function decimalExponent(v: Fraction): number {
  let e = v.n.toString().length - v.d.toString().length;
  const at = (k: number): Fraction => (k >= 0 ? new Fraction(pow10(k)) : new Fraction(1n, pow10(-k)));
  while (v.lt(at(e))) e--;
  while (!v.lt(at(e + 1))) e++;
  return e;
}

/** The digits of a positive rational rounded (ties to even) to ``precision`` significant digits. */
function significant(v: Fraction, precision: number): { digits: string; exponent: number } {
  let e = decimalExponent(v);
  const shift = precision - 1 - e;
  const scale = shift >= 0 ? new Fraction(pow10(shift)) : new Fraction(1n, pow10(-shift));
  let m = roundHalfEven(v.mul(scale));
  if (m === pow10(precision)) {
    m /= 10n;
    e += 1;
  }
  return { digits: m.toString(), exponent: e };
}

function exponentText(e: number): string {
  const sign = e < 0 ? "-" : "+";
  return `e${sign}${String(Math.abs(e)).padStart(2, "0")}`;
}

/** Python's ``format(x, ".Ng")`` (``":g"`` is precision 6): trailing zeros removed. */
export function general(x: number, precision = 6): string {
  const odd = special(x);
  if (odd !== null) return odd;
  const sign = negative(x) ? "-" : "";
  if (x === 0) return `${sign}0`;
  const p = Math.max(precision, 1);
  const { digits, exponent } = significant(Fraction.fromDouble(Math.abs(x)), p);
  if (exponent >= -4 && exponent < p) {
    let text: string;
    if (exponent >= 0) {
      const whole = digits.slice(0, exponent + 1);
      text = `${whole}.${digits.slice(exponent + 1)}`;
    } else {
      text = `0.${"0".repeat(-exponent - 1)}${digits}`;
    }
    text = text.replace(/0+$/, "").replace(/\.$/, "");
    return sign + text;
  }
  let mantissa = `${digits[0]}.${digits.slice(1)}`.replace(/0+$/, "").replace(/\.$/, "");
  if (mantissa === "") mantissa = "0";
  return `${sign}${mantissa}${exponentText(exponent)}`;
}

/** Python's ``repr(float)`` (one implementation, in core/pytext). */
export { reprFloat } from "../core/pytext";

/** ε for display with 4 decimals, rounded up: a cost is never understated (``round_up``). */
export function roundUp(epsilon: number): string {
  return fixed((Math.ceil(epsilon * 10_000) + 0) / 10_000, 4); // + 0: Python's int has no -0
}

/** ε for display with 4 decimals, rounded down: what is left is never overstated. */
export function roundDown(epsilon: number): string {
  return fixed(Math.max(Math.floor(epsilon * 10_000) / 10_000, 0.0), 4);
}

/** A likelihood ratio for a sentence: two decimals, or 3 significant digits from 1000 on. */
export function times(ratio: number): string {
  return ratio < 1000 ? fixed(ratio, 2) : general(ratio, 3);
}

/** A probability as a whole percentage, rounded exactly; never "100%" below 1 (``percent``). */
export function percent(share: Fraction): string {
  const whole = roundHalfEven(share.mul(Fraction.of(100)));
  return whole === 100n && share.lt(Fraction.of(1)) ? "over 99.5%" : `${whole}%`;
}

const view = new DataView(new ArrayBuffer(8));

/** The double with this sign, biased exponent and 52-bit fraction. */
function fromBits(negative: boolean, exponent: number, fraction: bigint): number {
  const bits = (BigInt(negative ? 1 : 0) << 63n) | (BigInt(exponent) << 52n) | fraction;
  view.setBigUint64(0, bits);
  return view.getFloat64(0);
}

/**
 * The double nearest to a rational, ties to even (Python's ``float(Fraction)``); ±Infinity
 * past the largest double.
 */
export function toDouble(value: Fraction): number {
  const negative = value.n < 0n;
  const n = negative ? -value.n : value.n;
  const d = value.d;
  if (n === 0n) return negative ? -0 : 0;
  // e = floor(log2(n/d)): 2^e <= n/d < 2^(e+1)
  let e = bitLength(n) - bitLength(d);
  const below = e >= 0 ? n < d << BigInt(e) : n << BigInt(-e) < d;
  if (below) e -= 1;
  // The value's last bit: 53 significant bits, or the subnormals' fixed 2^-1074.
  let lsb = Math.max(e - 52, -1074);
  const num = lsb <= 0 ? n << BigInt(-lsb) : n;
  const den = lsb <= 0 ? d : d << BigInt(lsb);
  let q = num / den;
  const twice = 2n * (num % den);
  if (twice > den || (twice === den && (q & 1n) === 1n)) q += 1n;
  if (q === 1n << 53n) {
    q >>= 1n; // rounding carried into a new bit
    lsb += 1;
  }
  if (lsb + 52 > 1023) return negative ? -Infinity : Infinity;
  if (q < 1n << 52n) return fromBits(negative, 0, q); // subnormal
  return fromBits(negative, lsb + 52 + 1023, q - (1n << 52n));
}

/** The exactly rounded sum of doubles, as Python's ``math.fsum``. */
export function fsum(values: Iterable<number>): number {
  let total = ZERO;
  for (const value of values) {
    if (!Number.isFinite(value)) throw new RangeError(`cannot sum ${value}`);
    total = total.add(Fraction.fromDouble(value));
  }
  return toDouble(total);
}
