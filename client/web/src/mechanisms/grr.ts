/** Generalized (k-ary) randomized response in the α form: keep the option, or draw one. */

import { Fraction } from "../core/fraction";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import type { ByteSource } from "../sampling/source";
import { randomizedResponse, randomizedResponseBytes } from "./options";
import { asOption, checkAlpha, checkOptions, grrRatio, optionsOf } from "./parameters";
import { registerMechanism } from "./registry";
import type { Mechanism, ReportValue, Truth } from "./types";

/**
 * GRR over k options: the true option with probability α, else one drawn uniformly from
 * all k, so ε = ln(1 + kα/(1−α)) exactly. Each report draws one exact Bernoulli(α) and one
 * uniform option (drawn whether or not it is used) and is sent as ``optionFixed``: 4 bytes
 * whatever the option.
 */
export function generalizedRandomizedResponse(k: number | bigint, alpha: number): Mechanism {
  const count = checkOptions(k);
  const value = checkAlpha(alpha);
  const keep = Fraction.fromDouble(value);
  const ratio = grrRatio(value, count);
  return {
    name: "grr",
    ratio,
    epsilon: tightestEpsilon(ratio),
    fixedBytes: randomizedResponseBytes(BigInt(count), keep),
    perturb(truth: Truth, source: ByteSource): ReportValue {
      const option = asOption(truth, count);
      const reported = randomizedResponse(BigInt(option), BigInt(count), keep, source);
      return { case: "optionFixed", value: Number(reported) };
    },
  };
}

registerMechanism({
  wireCase: "grr",
  questionKinds: ["categorical", "joint"],
  fromQuestion(question: Question): Mechanism {
    const kind = question.mechanism?.kind;
    return generalizedRandomizedResponse(optionsOf(question), kind?.case === "grr" ? kind.value.alpha : 0);
  },
});
