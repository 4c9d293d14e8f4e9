/** Optimized unary encoding: one noisy bit per option (Wang et al., USENIX Security 2017). */

import { Fraction } from "../core/fraction";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import { bernoulli, bernoulliBytes, bernoulliMany } from "../sampling/bernoulli";
import type { ByteSource } from "../sampling/source";
import { packBits } from "./options";
import { asOption, checkHalfOpen, checkOptions, flipRatio, optionsOf } from "./parameters";
import { registerMechanism } from "./registry";
import type { Mechanism, ReportValue, Truth } from "./types";

const HALF = Fraction.of(1, 2);

/**
 * OUE over k options: the true option's bit is 1 with probability 1/2 and every other bit
 * with probability q, independently; ε = ln((1−q)/q) exactly. As the Python client, a
 * report draws k Bernoulli(q) bits at once, then one Bernoulli(1/2) that replaces the true
 * option's bit; it is sent as ``bits``, ceil(k/8) bytes.
 */
export function optimizedUnaryEncoding(k: number | bigint, q: number): Mechanism {
  const count = checkOptions(k);
  const value = checkHalfOpen(q);
  const exact = Fraction.fromDouble(value);
  const ratio = flipRatio(value);
  return {
    name: "oue",
    ratio,
    epsilon: tightestEpsilon(ratio),
    fixedBytes: count * bernoulliBytes(exact) + bernoulliBytes(HALF),
    perturb(truth: Truth, source: ByteSource): ReportValue {
      const option = asOption(truth, count);
      const bits = bernoulliMany(exact, count, source);
      bits[option] = bernoulli(HALF, source);
      return { case: "bits", value: packBits(bits) };
    },
  };
}

registerMechanism({
  wireCase: "oue",
  questionKinds: ["categorical", "joint"],
  fromQuestion(question: Question): Mechanism {
    const kind = question.mechanism?.kind;
    return optimizedUnaryEncoding(optionsOf(question), kind?.case === "oue" ? kind.value.q : 0);
  },
});
