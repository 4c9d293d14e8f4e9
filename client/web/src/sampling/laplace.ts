/** Exact discrete Laplace draws whose reads and work do not depend on the noise (Python's port). */

import { Fraction } from "../core/fraction";
import { expNegBounds, leadingBits, type Shape } from "./expdigits";
import { geometricExp } from "./rational";
import { bigEndian, type ByteSource } from "./source";

/** Bytes of the uniform each fixed Bernoulli compares (a tie, 2^-128, reads on). */
export const WORD_BYTES = 16;
/** The fixed bits of |Z| cover all but a tail of probability at most 2^-64. */
export const TAIL_BITS = 64;
const MAX_BITS = 62; // |Z| is an int64 in Python

/**
 * The fixed Bernoullis of one scale (Python's ``LaplacePlan``): row 0 decides Z = 0, rows
 * 1..J the bits of |Z| − 1, row J + 1 the tail |Z| > 2^J; each row's probability is
 * shape(e^(−x)) and its threshold floor(p·2^128), as four big-endian 32-bit words.
 */
export interface LaplacePlan {
  readonly gamma: Fraction;
  readonly bits: number;
  readonly shapes: readonly Shape[];
  readonly args: readonly Fraction[];
  readonly words: Uint32Array;
}

/** The least J with e^(−γ·2^J) ≤ 2^-64, decided on Python's certified upper bound. */
function tailBits(gamma: Fraction): number {
  for (let bits = 0; ; bits++) {
    const x = new Fraction(gamma.n << BigInt(bits), gamma.d);
    const bound = expNegBounds(x, TAIL_BITS + 8);
    if (!(bound.hi << BigInt(TAIL_BITS) > 1n << BigInt(bound.bits))) return bits;
  }
}

const plans = new Map<string, LaplacePlan>();

/** The plan of a positive rational scale, computed once (Python's ``laplace_plan``). */
export function laplacePlan(scale: Fraction): LaplacePlan {
  const key = scale.toString();
  const known = plans.get(key);
  if (known !== undefined) return known;
  const gamma = new Fraction(scale.d, scale.n);
  const bits = tailBits(gamma);
  if (bits > MAX_BITS) {
    throw new RangeError(`scale ${scale} is too large: |noise| would not fit in 62 bits`);
  }
  const shapes: Shape[] = ["tanh"];
  const args: Fraction[] = [gamma];
  for (let j = 0; j <= bits; j++) {
    shapes.push(j < bits ? "logistic" : "exp");
    args.push(new Fraction(gamma.n << BigInt(j), gamma.d));
  }
  const words = new Uint32Array(4 * shapes.length);
  shapes.forEach((shape, row) => {
    const threshold = leadingBits(shape, args[row]!, 8 * WORD_BYTES);
    for (let w = 0; w < 4; w++) {
      words[4 * row + w] = Number((threshold >> BigInt(96 - 32 * w)) & 0xffffffffn);
    }
  });
  const plan = { gamma, bits, shapes, args, words };
  if (plans.size > 256) plans.clear();
  plans.set(key, plan);
  return plan;
}

/** U < p for a uniform U whose first 128 bits equal p's: 64 more bits at a time, big-endian. */
function resolveTie(plan: LaplacePlan, row: number, source: ByteSource): boolean {
  const shape = plan.shapes[row]!;
  const x = plan.args[row]!;
  for (let bits = 8 * WORD_BYTES + 64; ; bits += 64) {
    const digit = leadingBits(shape, x, bits) & 0xffffffffffffffffn;
    const drawn = bigEndian(source(8));
    if (drawn !== digit) return drawn < digit; // p is irrational: its expansion never ends
  }
}

/**
 * One exact discrete Laplace draw, P(Z = z) = (1−q)/(1+q)·q^|z| with q = e^(−1/scale),
 * reading bytes exactly as Python's ``discrete_laplace`` reads them for one draw: one call
 * for a 128-bit big-endian uniform per row of the plan and a sign byte, each uniform
 * compared with its row's threshold (every row, whatever Z: the same bytes and work);
 * then, rarely, 8 more bytes at a time for each tie (rows in order, 2^-128 per row),
 * and a geometric draw of the part above 2^J when |Z| > 2^J (at most 2^-64 per draw).
 */
export function discreteLaplace(plan: LaplacePlan, source: ByteSource): bigint {
  const rows = plan.bits + 2;
  const raw = source(rows * WORD_BYTES + 1);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const below = new Uint8Array(rows);
  const tie = new Uint8Array(rows);
  const words = plan.words;
  for (let row = 0; row < rows; row++) {
    let lt = 0;
    let eq = 1;
    for (let w = 0; w < 4; w++) {
      const drawn = view.getUint32(WORD_BYTES * row + 4 * w);
      const threshold = words[4 * row + w]!;
      lt |= eq & +(drawn < threshold);
      eq &= +(drawn === threshold);
    }
    below[row] = lt;
    tie[row] = eq;
  }
  const sign = raw[rows * WORD_BYTES]! & 1;
  for (let row = 0; row < rows; row++) {
    if (tie[row]) below[row] = +resolveTie(plan, row, source); // probability 2^-128
  }
  let low = 0; // bits 0..31 of |Z| − 1
  let high = 0; // bits 32..61
  for (let j = 0; j < plan.bits; j++) {
    if (j < 32) low += below[j + 1]! * 2 ** j;
    else high += below[j + 1]! * 2 ** (j - 32);
  }
  let rest = (BigInt(high) << 32n) + BigInt(low);
  if (below[plan.bits + 1]) {
    // |Z| > 2^J: probability at most 2^-64
    const extra = 1n + geometricExp(plan.args[plan.bits + 1]!, source);
    const limit = (1n << BigInt(MAX_BITS)) >> BigInt(plan.bits);
    rest += (extra < limit ? extra : limit) << BigInt(plan.bits);
  }
  const magnitude = BigInt(1 - below[0]!) * (1n + rest);
  return magnitude * BigInt(1 - 2 * sign);
}
