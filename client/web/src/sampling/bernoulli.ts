/** Exact Bernoulli draws for dyadic probabilities, reading the same bytes whatever the outcome. */

import { Fraction, ONE, ZERO, bitLength } from "../core/fraction";
import { bigEndian, type ByteSource } from "./source";

const WIDTHS = [1, 2, 4, 8];

interface Threshold {
  bytes: number; // width × count: every draw reads exactly this many bytes
  value: bigint; // p's base-256 digits, zero-padded to ``bytes``, as one big-endian integer
}

const cache = new Map<string, Threshold>();

/** p's digits in base 256 laid out as Python's ``_threshold_words``: w-byte words, padded. */
function threshold(p: Fraction): Threshold {
  const key = p.toString();
  const known = cache.get(key);
  if (known) return known;
  const exponent = bitLength(p.d) - 1;
  if (p.d !== 1n << BigInt(exponent)) throw new RangeError(`probability ${p} is not dyadic`);
  const places = Math.ceil(exponent / 8);
  const scaled = p.n << BigInt(8 * places - exponent); // p × 256^places, an integer
  const width = WIDTHS.find((w) => places <= w) ?? 8;
  const count = Math.ceil(places / width);
  const bytes = width * count;
  const made = { bytes, value: scaled << BigInt(8 * (bytes - places)) };
  if (cache.size > 256) cache.clear();
  cache.set(key, made);
  return made;
}

/** The bytes one ``bernoulli(p)`` draw reads: none for p = 0 or 1. */
export function bernoulliBytes(p: Fraction): number {
  return p.eq(ZERO) || p.eq(ONE) ? 0 : threshold(p).bytes;
}

/**
 * One Bernoulli(p) draw for a dyadic p = N/256^d, exactly as the Python client draws it: a
 * uniform U of the smallest whole number of 1-, 2-, 4- or 8-byte words holding d bytes,
 * compared with p's digits; every draw reads all its bytes, whatever its outcome.
 */
export function bernoulli(p: Fraction, source: ByteSource): boolean {
  if (p.lt(ZERO) || ONE.lt(p)) throw new RangeError(`probability must be in [0, 1], got ${p}`);
  if (p.eq(ONE)) return true;
  if (p.eq(ZERO)) return false;
  const { bytes, value } = threshold(p);
  return bigEndian(source(bytes)) < value;
}

/**
 * ``size`` independent Bernoulli(p) draws read at once, as the Python client's vectorized
 * ``bernoulli(p, size, source)``: one read of ``size`` × the bytes of one draw, draw i from
 * the i-th slice; the same bytes, in the same order, as ``size`` calls of ``bernoulli``.
 */
export function bernoulliMany(p: Fraction, size: number, source: ByteSource): boolean[] {
  if (p.lt(ZERO) || ONE.lt(p)) throw new RangeError(`probability must be in [0, 1], got ${p}`);
  if (p.eq(ONE) || p.eq(ZERO)) return new Array<boolean>(size).fill(p.eq(ONE));
  const { bytes, value } = threshold(p);
  const drawn = source(bytes * size);
  const out = new Array<boolean>(size);
  for (let i = 0; i < size; i++) out[i] = bigEndian(drawn.subarray(i * bytes, (i + 1) * bytes)) < value;
  return out;
}
