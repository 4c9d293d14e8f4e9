/** Exact privacy loss: e^ε compared with a mechanism's rational ratio, never by float rounding. */

import { Fraction, ONE, bitLength } from "../core/fraction";

const START_BITS = 200;
const MAX_BITS = 8192;

/** Lower and upper bounds of e^x × 2^bits, for a rational 0 ≤ x, from Taylor's series. */
function expBounds(x: Fraction, bits: number): [bigint, bigint] {
  const scale = 1n << BigInt(bits);
  const { n: a, d: b } = x;
  let low = scale; // floor of each term: never above the true term
  let high = scale; // ceiling of each term: never below it
  let sumLow = scale;
  let sumHigh = scale;
  for (let i = 1n; ; i++) {
    low = (low * a) / (b * i);
    high = (high * a + b * i - 1n) / (b * i);
    sumLow += low;
    sumHigh += high;
    // The rest of the series after term i is at most term_i × x/(i+1) / (1 − x/(i+2)),
    // once i + 2 > x; stop when that bound is below one unit.
    if (a < b * (i + 2n) && high * a < b * (i + 1n)) {
      const tail = (high * a * (i + 2n) + b * (i + 1n) * (b * (i + 2n) - a) - 1n) /
        (b * (i + 1n) * (b * (i + 2n) - a)) + 1n;
      return [sumLow, sumHigh + tail];
    }
  }
}

/**
 * Whether e^epsilon ≥ ratio, decided exactly (Python's ``exp_at_least``); ``ratio`` null
 * means an unbounded ratio (no privacy), which only an infinite ε covers.
 */
export function expAtLeast(epsilon: number, ratio: Fraction | null): boolean {
  if (Number.isNaN(epsilon)) throw new RangeError("epsilon must not be NaN");
  if (ratio === null) return epsilon === Infinity;
  if (epsilon === Infinity) return true;
  if (ratio.n <= 0n) throw new RangeError(`ratio must be positive, got ${ratio}`);
  if (epsilon < 0) return !expAbove(-epsilon, ONE.div(ratio)); // e^ε ≥ r ⟺ not e^−ε > 1/r
  const x = Fraction.fromDouble(epsilon);
  for (let bits = START_BITS; bits <= MAX_BITS; bits *= 2) {
    const [low, high] = expBounds(x, bits);
    const target = ratio.mul(new Fraction(1n << BigInt(bits)));
    if (new Fraction(low).cmp(target) >= 0) return true;
    if (new Fraction(high).cmp(target) < 0) return false;
  }
  throw new Error(`cannot decide e^${epsilon} >= ${ratio}`);
}

/** e^x > r for x ≥ 0, exactly. */
function expAbove(x: number, r: Fraction): boolean {
  const value = Fraction.fromDouble(x);
  for (let bits = START_BITS; bits <= MAX_BITS; bits *= 2) {
    const [low, high] = expBounds(value, bits);
    const target = r.mul(new Fraction(1n << BigInt(bits)));
    if (new Fraction(low).cmp(target) > 0) return true;
    if (new Fraction(high).cmp(target) <= 0) return false;
  }
  throw new Error(`cannot decide e^${x} > ${r}`);
}

const view = new DataView(new ArrayBuffer(8));

/** The next double after a non-negative finite x, towards +∞ (up) or 0 (down). */
function nextAfter(x: number, up: boolean): number {
  if (x === 0) return up ? Number.MIN_VALUE : 0;
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, up ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/** ln of a positive integer of any size, to a few ulps: its top 64 bits and its length. */
function logOf(value: bigint): number {
  const shift = Math.max(0, bitLength(value) - 64);
  return Math.log(Number(value >> BigInt(shift))) + shift * Math.LN2;
}

/**
 * The smallest double ε with e^ε ≥ ratio (Python's ``tightest_epsilon``): the privacy loss,
 * never understated; Infinity for an unbounded ratio, 0 for a ratio of at most 1.
 */
export function tightestEpsilon(ratio: Fraction | null): number {
  if (ratio === null) return Infinity;
  if (ratio.le(ONE)) return 0;
  let guess = Math.log1p(ratio.sub(ONE).toNumber()); // accurate near 1, where ratios are
  if (!Number.isFinite(guess)) guess = logOf(ratio.n) - logOf(ratio.d);
  guess = Math.max(guess, Number.MIN_VALUE);
  while (!expAtLeast(guess, ratio)) guess = nextAfter(guess, true);
  while (guess > 0 && expAtLeast(nextAfter(guess, false), ratio)) guess = nextAfter(guess, false);
  return guess;
}
