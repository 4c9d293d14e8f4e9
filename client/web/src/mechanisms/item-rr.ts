/** Per-item randomized response for multi-select questions: each of k indicator bits flipped. */

import { Fraction } from "../core/fraction";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import { bernoulliBytes, bernoulliMany } from "../sampling/bernoulli";
import type { ByteSource } from "../sampling/source";
import { packBits } from "./options";
import { checkHalfOpen, checkItems, flipRatio } from "./parameters";
import { registerMechanism } from "./registry";
import type { Mechanism, ReportValue, Truth } from "./types";

/** A true set of items as its mask (bit i: item i chosen), in [0, 2^k) (Python's ``as_item_sets``). */
function asMask(truth: Truth, k: number): bigint {
  if (typeof truth === "boolean" || (typeof truth === "number" && !Number.isSafeInteger(truth))) {
    throw new TypeError(`value must be an item-set mask (an integer), got ${String(truth)}`);
  }
  const mask = BigInt(truth);
  if (mask < 0n || mask >> BigInt(k) !== 0n) {
    throw new RangeError(`value must be an item-set mask in [0, 2^${k}), got ${mask}`);
  }
  return mask;
}

/**
 * Per-item randomized response over k items: each bit of the true set is flipped with
 * probability q, independently; ε = k·ln((1−q)/q) exactly (the ratio ((1−q)/q)^k). A
 * report draws the k flips at once, as the Python client, and is sent as ``bits``.
 */
export function itemRandomizedResponse(k: number, q: number): Mechanism {
  const count = checkItems(k);
  const value = checkHalfOpen(q);
  const exact = Fraction.fromDouble(value);
  const one = flipRatio(value);
  const ratio = new Fraction(one.n ** BigInt(count), one.d ** BigInt(count));
  return {
    name: "item_rr",
    ratio,
    epsilon: tightestEpsilon(ratio),
    fixedBytes: count * bernoulliBytes(exact),
    perturb(truth: Truth, source: ByteSource): ReportValue {
      const mask = asMask(truth, count);
      const flips = bernoulliMany(exact, count, source);
      const bits = flips.map((flip, i) => ((mask >> BigInt(i)) & 1n) === 1n !== flip);
      return { case: "bits", value: packBits(bits) };
    },
  };
}

registerMechanism({
  wireCase: "itemRr",
  questionKinds: ["multiSelect"],
  fromQuestion(question: Question): Mechanism {
    const kind = question.mechanism?.kind;
    const items = question.kind.case === "multiSelect" ? question.kind.value.items.length : 0;
    return itemRandomizedResponse(items, kind?.case === "itemRr" ? kind.value.q : 0);
  },
});
