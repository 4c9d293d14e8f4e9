/** The universal hash family of optimized local hashing: ((a·v + b) mod P) mod g, P = 2^61 − 1. */

import { ParameterError } from "../core/errors";

/** P = 2^61 − 1, a Mersenne prime; a and b are drawn uniformly from [0, P). */
export const HASH_PRIME = (1n << 61n) - 1n;

/** Largest hash range g (so g and the reported value fit in 32 bits). */
export const HASH_MAX_RANGE = 2 ** 32 - 1;

/** ``g`` if it is an integer hash range in [2, 2^32 − 1] (Python's ``check_hash_range``). */
export function checkHashRange(g: number): number {
  if (!Number.isInteger(g) || g < 2 || g > HASH_MAX_RANGE) {
    throw new ParameterError(`g must be between 2 and ${HASH_MAX_RANGE}, got ${g}`);
  }
  return g;
}

/** H_{a,b}(v) = ((a·v + b) mod P) mod g in exact integers (Python's ``universal_hash``). */
export function universalHash(a: bigint, b: bigint, value: bigint, g: bigint): bigint {
  return ((a * value + b) % HASH_PRIME) % g;
}
