/** Exact sums of ε: Python's ``math.fsum`` and ``float(Fraction)``, correctly rounded. */

import { Fraction, ZERO, bitLength } from "../core/fraction";

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
