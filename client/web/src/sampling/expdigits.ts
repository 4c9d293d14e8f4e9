/** Exact binary digits of probabilities made from e^(−x), x rational, by integer interval arithmetic. */

import { Fraction, bitLength } from "../core/fraction";

const GUARD = 16;

/**
 * How a probability p is made from E = e^(−x) (Python's ``Shape``): ``exp`` p = E,
 * ``logistic`` p = E/(1 + E) (increasing in E), ``tanh`` p = (1 − E)/(1 + E) (decreasing).
 */
export type Shape = "exp" | "logistic" | "tanh";

/**
 * (lo, hi) as integers over 2^bits with lo ≤ e^(−x)·2^bits ≤ hi, exactly as Python's
 * ``exp_neg_bounds(x, precision)`` computes them (the same integers, so the same decisions):
 * e^(−x) = (e^(−f))^(2^s), f = x/2^s < 1; the alternating Taylor series of e^(−f) brackets
 * it between consecutive partial sums, which are rounded outwards and squared s times.
 * The partial sums are kept over the common denominator b^k·k! (f = a/b), with no gcd.
 */
export function expNegBounds(x: Fraction, precision: number): { lo: bigint; hi: bigint; bits: number } {
  if (x.n < 0n) throw new RangeError(`x must be >= 0, got ${x}`);
  const s = bitLength((x.n + x.d - 1n) / x.d); // 2^s > ceil(x) >= x
  const a = x.n;
  const b = x.d << BigInt(s); // f = a/b
  const bits = precision + s + GUARD;
  const one = 1n << BigInt(bits);
  // term = a^k/den, total = sum/den, den = b^k·k!
  let den = 1n;
  let power = 1n;
  let sum = 1n;
  let low: [bigint, bigint];
  let high: [bigint, bigint];
  for (let index = 1n; ; ) {
    den *= b * index;
    power *= a;
    sum *= b * index;
    const below = sum - power;
    if (power * one < den) {
      low = [below, den];
      high = [sum, den];
      break;
    }
    sum = below;
    index++;
    den *= b * index;
    power *= a;
    sum *= b * index;
    const above = sum + power;
    if (power * one < den) {
      low = [sum, den];
      high = [above, den];
      break;
    }
    sum = above;
    index++;
  }
  let lo = floorDiv(low[0] << BigInt(bits), low[1]);
  let hi = -floorDiv(-high[0] << BigInt(bits), high[1]);
  const shift = BigInt(bits);
  for (let i = 0; i < s; i++) {
    lo = (lo * lo) >> shift;
    hi = -((-hi * hi) >> shift);
  }
  return { lo: lo < 0n ? 0n : lo, hi: hi > one ? one : hi, bits };
}

/** Python's floor division for a positive divisor. */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

const cache = new Map<string, bigint>();

/**
 * floor(p·2^bits) exactly for p = shape(e^(−x)), x > 0 rational (p is irrational): the
 * bounds on e^(−x) bound p (each shape is monotone in E), and the precision doubles until
 * both ends have the same first ``bits`` bits (Python's ``leading_bits``).
 */
export function leadingBits(shape: Shape, x: Fraction, bits: number): bigint {
  if (x.n <= 0n) throw new RangeError(`x must be > 0, got ${x}`);
  const key = `${shape}:${x}:${bits}`;
  const known = cache.get(key);
  if (known !== undefined) return known;
  const width = BigInt(bits);
  for (let precision = bits + GUARD; ; precision *= 2) {
    const { lo, hi, bits: scale } = expNegBounds(x, precision);
    const unit = 1n << BigInt(scale); // E is lo/unit .. hi/unit
    let floorLo: bigint;
    let floorHi: bigint;
    if (shape === "exp") {
      floorLo = (lo << width) / unit;
      floorHi = (hi << width) / unit;
    } else if (shape === "logistic") {
      floorLo = (lo << width) / (unit + lo);
      floorHi = (hi << width) / (unit + hi);
    } else {
      floorLo = ((unit - hi) << width) / (unit + hi);
      floorHi = ((unit - lo) << width) / (unit + lo);
    }
    if (floorLo === floorHi) {
      if (cache.size > 1024) cache.clear();
      cache.set(key, floorLo);
      return floorLo;
    }
  }
}
