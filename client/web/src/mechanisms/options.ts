/** Randomized values of the frequency oracles and their k-bit reports, as Python's ``_options.py``. */

import type { Fraction } from "../core/fraction";
import { bernoulli, bernoulliBytes } from "../sampling/bernoulli";
import type { ByteSource } from "../sampling/source";
import { uniformBelow, uniformBytes } from "../sampling/uniform";

/**
 * Keep ``truth`` with probability α exactly, else a uniform draw from [0, size) (Python's
 * ``randomized_response``): the replacement is drawn whether or not the truth is kept, and
 * picked by arithmetic (replacement + keep·(truth − replacement)), so the bytes read and the
 * work are the same whatever the report.
 */
export function randomizedResponse(truth: bigint, size: bigint, alpha: Fraction, source: ByteSource): bigint {
  const keep = bernoulli(alpha, source) ? 1n : 0n;
  const replacement = uniformBelow(size, source);
  return replacement + keep * (truth - replacement);
}

/** The bytes one ``randomizedResponse`` over ``size`` values reads: its keep bit and replacement. */
export function randomizedResponseBytes(size: bigint, alpha: Fraction): number {
  return bernoulliBytes(alpha) + uniformBytes(size);
}

/**
 * k bits packed as the wire's ``Report.bits`` (Python's ``encode_oue_bits``): bit v is bit
 * (v mod 8) of byte v div 8, padding 0, so every report of k bits has ceil(k/8) bytes.
 */
export function packBits(bits: readonly boolean[]): Uint8Array {
  const packed = new Uint8Array(Math.ceil(bits.length / 8));
  bits.forEach((bit, v) => {
    packed[v >> 3]! |= (bit ? 1 : 0) << (v & 7);
  });
  return packed;
}
