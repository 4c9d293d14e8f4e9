/** Yes/no randomized response: the truth kept with probability (1+α)/2, one bit on the wire. */

import { Fraction, ONE } from "../core/fraction";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import { bernoulli, bernoulliBytes } from "../sampling/bernoulli";
import type { ByteSource } from "../sampling/source";
import { checkAlpha, checkOptions, grrRatio } from "./parameters";
import { registerMechanism } from "./registry";
import type { Mechanism, ReportValue, Truth } from "./types";

/** A true yes/no answer: a boolean, or 0/1 (Python's ``_as_bits``). */
function asBit(truth: Truth): boolean {
  if (typeof truth === "boolean") return truth;
  if (truth === 0 || truth === 0n) return false;
  if (truth === 1 || truth === 1n) return true;
  throw new RangeError(`bit must be 0 or 1, got ${String(truth)}`);
}

/**
 * Warner's randomized response with keep-probability α (GRR over k = 2): ε = ln((1+α)/(1−α))
 * exactly. Each report draws one exact Bernoulli((1+α)/2) "keep" and is the truth when it
 * is kept, its opposite otherwise (Python's ``truth == keep``).
 */
export function randomizedResponse(alpha: number): Mechanism {
  checkOptions(2);
  const value = checkAlpha(alpha);
  const pTruth = ONE.add(Fraction.fromDouble(value)).div(Fraction.of(2));
  const ratio = grrRatio(value, 2);
  return {
    name: "randomized_response",
    ratio,
    epsilon: tightestEpsilon(ratio),
    fixedBytes: bernoulliBytes(pTruth),
    perturb(truth: Truth, source: ByteSource): ReportValue {
      const bit = asBit(truth);
      const keep = bernoulli(pTruth, source);
      return { case: "bit", value: bit === keep };
    },
  };
}

registerMechanism({
  wireCase: "randomizedResponse",
  questionKinds: ["binary"],
  fromQuestion(question: Question): Mechanism {
    const kind = question.mechanism?.kind;
    return randomizedResponse(kind?.case === "randomizedResponse" ? kind.value.alpha : 0);
  },
});
