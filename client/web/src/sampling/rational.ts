/** Exact Bernoullis of any rational probability and of exp(−γ), and geometric draws (as Python). */

import { Fraction } from "../core/fraction";
import type { ByteSource } from "./source";

const DIGIT = 64n;

/**
 * One Bernoulli(numerator/denominator) draw, exactly, as the Python client's
 * ``bernoulli_rational`` draws one: a uniform U in [0, 1) is read 64 bits at a time
 * (little-endian words) and compared with the probability's base-2^64 digits; only a tie
 * (2^-64 per digit) reads another word, and a tie where p's expansion ends is False.
 *
 * A certain draw (probability 0 or 1) reads nothing, unless ``fixedReads``: then it reads
 * the first word like any other (p = 1 read as p = 0, then set), for probabilities made
 * from a secret, so that the bytes read do not depend on it.
 */
export function bernoulliRational(
  numerator: bigint,
  denominator: bigint,
  source: ByteSource,
  fixedReads = false,
): boolean {
  if (denominator <= 0n) throw new RangeError(`denominator must be positive, got ${denominator}`);
  if (numerator < 0n || numerator > denominator) {
    throw new RangeError(`probability must be in [0, 1], got ${numerator}/${denominator}`);
  }
  const certain = numerator === denominator;
  let remainder = certain ? 0n : numerator;
  if (!fixedReads && (certain || numerator === 0n)) return certain;
  for (;;) {
    const shifted = remainder << DIGIT;
    const digit = shifted / denominator;
    remainder = shifted % denominator;
    const bytes = source(8);
    const drawn = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
    if (drawn !== digit || remainder === 0n) return certain || drawn < digit;
  }
}

/**
 * Bernoulli(exp(−γ)) for a rational γ = numerator/denominator in [0, 1], by Canonne, Kamath
 * and Steinke's Algorithm 1 (Python's ``_bernoulli_exp_unit`` for one draw): K counts up
 * while Bernoulli(γ/K) succeeds; the result is whether K is odd when it first fails.
 */
function bernoulliExpUnit(numerator: bigint, denominator: bigint, source: ByteSource): boolean {
  for (let k = 1n; ; k++) {
    if (!bernoulliRational(numerator, denominator * k, source)) return k % 2n === 1n;
  }
}

/**
 * One Bernoulli(exp(−γ)) draw for a rational γ = numerator/denominator ≥ 0, exactly, as
 * Python's ``bernoulli_exp`` draws one: exp(−1) once per whole unit of γ while every draw
 * so far succeeded, then exp(−frac(γ)) if all did.
 */
export function bernoulliExp(numerator: bigint, denominator: bigint, source: ByteSource): boolean {
  if (denominator <= 0n) throw new RangeError(`denominator must be positive, got ${denominator}`);
  if (numerator < 0n) throw new RangeError(`gamma must be >= 0, got ${numerator}/${denominator}`);
  let result = true;
  const whole = numerator / denominator;
  for (let round = 1n; round <= whole && result; round++) {
    result = bernoulliExpUnit(denominator, denominator, source);
  }
  return result && bernoulliExpUnit(numerator % denominator, denominator, source);
}

/**
 * Bernoulli(exp(−γ)) for one rational γ ≥ 0 as Python's ``_bernoulli_exp_same`` draws it:
 * exp(−1)^floor(γ) · exp(−frac(γ)), a factor at a time until one fails; each factor by
 * CKS Algorithm 1 on the shared-numerator rational Bernoulli (Fraction(1) reads as 1/1).
 */
export function bernoulliExpSame(gamma: Fraction, source: ByteSource): boolean {
  const whole = gamma.n / gamma.d;
  const part = new Fraction(gamma.n % gamma.d, gamma.d);
  const factors: Fraction[] = [];
  for (let i = 0n; i < whole; i++) factors.push(new Fraction(1n));
  if (part.n !== 0n) factors.push(part);
  for (const unit of factors) {
    let k = 1n;
    while (bernoulliRational(unit.n, unit.d * k, source)) k++;
    if (k % 2n === 0n) return false;
  }
  return true;
}

/**
 * One geometric draw, P(V = v) = (1 − e^−γ)·e^(−γv), v = 0, 1, ...: the successes of
 * Bernoulli(exp(−γ)) before the first failure (Python's ``geometric_exp``).
 */
export function geometricExp(gamma: Fraction, source: ByteSource): bigint {
  if (gamma.n <= 0n) throw new RangeError(`gamma must be > 0, got ${gamma}`);
  let count = 0n;
  while (bernoulliExpSame(gamma, source)) count++;
  return count;
}
