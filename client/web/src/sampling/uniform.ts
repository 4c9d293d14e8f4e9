/** Exactly uniform integers below any bound by rejection, with the same reads for every value. */

import { bitLength } from "../core/fraction";
import { littleEndian, type ByteSource } from "./source";

export const MAX_ROUNDS = 256;

const counts = new Map<bigint, number>();
const TWO_32 = 1n << 32n;
const TWO_64 = 1n << 64n;

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

/** The bytes one ``uniformBelow(bound)`` draw always reads: its first round of candidates. */
export function uniformBytes(bound: bigint): number {
  if (bound === 1n) return 0;
  const bits = bitLength(bound - 1n);
  return candidates(bound) * ([8, 16, 32, 64].find((w) => bits <= w)! / 8);
}

/**
 * One integer uniform on [0, bound), as the Python client draws it: each round reads R
 * candidates, little-endian words of the smallest of 1, 2, 4 or 8 bytes holding
 * b = bitLength(bound − 1) bits (low b bits kept), and takes the first below ``bound``.
 */
export function uniformBelow(bound: bigint, source: ByteSource): bigint {
  if (bound < 1n || bound > TWO_64) throw new RangeError(`bound must be in [1, 2^64], got ${bound}`);
  if (bound === 1n) return 0n;
  if (bound <= TWO_32) return BigInt(uniformSmall(Number(bound), source));
  const bits = bitLength(bound - 1n);
  const width = [8, 16, 32, 64].find((w) => bits <= w)! / 8;
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

/** ``uniformBelow`` for 2 ≤ bound ≤ 2^32 on plain numbers: the same reads, candidates and choice. */
function uniformSmall(bound: number, source: ByteSource): number {
  const bits = 32 - Math.clz32(bound - 1);
  const width = bits <= 8 ? 1 : bits <= 16 ? 2 : 4;
  const modulus = 2 ** bits; // word % modulus keeps the low b bits
  const count = candidates(BigInt(bound));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const raw = source(count * width);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    let chosen = -1;
    for (let i = 0; i < count; i++) {
      const whole =
        width === 1 ? raw[i]! : width === 2 ? view.getUint16(2 * i, true) : view.getUint32(4 * i, true);
      const word = whole % modulus;
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
