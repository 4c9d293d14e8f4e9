/** Exactly uniform integers below any bound by rejection, with the same reads for every value. */

import { bitLength } from "../core/fraction";
import { littleEndian, type ByteSource } from "./source";

export const MAX_ROUNDS = 256;

const counts = new Map<bigint, number>();

/** The least R with ((2^b − bound)/2^b)^R ≤ 2^-64: all R candidates rejected that rarely. */
export function candidates(bound: bigint): number {
  const known = counts.get(bound);
  if (known !== undefined) return known;
  const bits = bitLength(bound - 1n);
  const rejected = (1n << BigInt(bits)) - bound;
  let count = 1;
  while (rejected ** BigInt(count) << 64n > 1n << BigInt(bits * count)) count += 1;
  if (counts.size > 1024) counts.clear();
  counts.set(bound, count);
  return count;
}

/**
 * One integer uniform on [0, bound), as the Python client draws it: each round reads R
 * candidates, little-endian words of the smallest of 1, 2, 4 or 8 bytes holding
 * b = bitLength(bound − 1) bits (low b bits kept), and takes the first below ``bound``.
 */
export function uniformBelow(bound: bigint, source: ByteSource): bigint {
  if (bound < 1n || bound > 1n << 64n) throw new RangeError(`bound must be in [1, 2^64], got ${bound}`);
  if (bound === 1n) return 0n;
  const bits = bitLength(bound - 1n);
  const width = [8, 16, 32, 64].find((w) => bits <= w)! / 8;
  if (width <= 4) return BigInt(uniformSmall(Number(bound), bits, width, candidates(bound), source));
  const mask = (1n << BigInt(bits)) - 1n;
  const count = candidates(bound);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const raw = source(count * width);
    let chosen = -1n;
    for (let i = 0; i < count; i++) {
      const word = littleEndian(raw.subarray(i * width, (i + 1) * width)) & mask;
      if (chosen < 0n && word < bound) chosen = word;
    }
    if (chosen >= 0n) return chosen;
  }
  throw new Error(
    `random source rejected draws below ${bound} for ${MAX_ROUNDS} rounds in a row; ` +
      "it is not producing uniform random bytes",
  );
}

/** ``uniformBelow``'s rounds for words of at most 4 bytes, in exact Number arithmetic (faster). */
function uniformSmall(bound: number, bits: number, width: number, count: number, source: ByteSource): number {
  const modulus = 2 ** bits; // the low ``bits`` bits of a word below 2^32: word mod 2^bits
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const raw = source(count * width);
    let chosen = -1;
    for (let i = 0; i < count; i++) {
      let word = 0;
      for (let j = width - 1; j >= 0; j--) word = word * 256 + raw[i * width + j]!;
      word %= modulus;
      if (chosen < 0 && word < bound) chosen = word;
    }
    if (chosen >= 0) return chosen;
  }
  throw new Error(
    `random source rejected draws below ${bound} for ${MAX_ROUNDS} rounds in a row; ` +
      "it is not producing uniform random bytes",
  );
}

/** ``uniformBelow`` for bounds that fit a JavaScript number exactly. */
export function uniformIndex(bound: number, source: ByteSource): number {
  return Number(uniformBelow(BigInt(bound), source));
}
