/** Optimized local hashing: a random universal hash, then GRR over its g values. */

import { create } from "@bufbuild/protobuf";
import { Fraction } from "../core/fraction";
import { HashedOptionSchema, type Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import type { ByteSource } from "../sampling/source";
import { uniformBelow, uniformBytes } from "../sampling/uniform";
import { randomizedResponse, randomizedResponseBytes } from "./options";
import { asOption, checkAlpha, checkOptions, grrRatio, optionsOf } from "./parameters";
import { registerMechanism } from "./registry";
import type { Mechanism, ReportValue, Truth } from "./types";
import { HASH_PRIME, checkHashRange, universalHash } from "./universal-hash";

/**
 * OLH over k options with hash range g: a and b uniform on [0, P), y = H_{a,b}(x) with
 * probability α, else uniform on [0, g); ε = ln(1 + gα/(1−α)) exactly. The draws are the
 * Python client's, in its order: a, b, the keep bit, the replacement value. The report is
 * ``hashed`` with a, b and ``valueFixed`` all present (8 + 8 + 4 bytes) whatever they are.
 */
export function optimizedLocalHashing(k: number | bigint, g: number, alpha: number): Mechanism {
  const count = checkOptions(k);
  const range = checkHashRange(g);
  const value = checkAlpha(alpha);
  const keep = Fraction.fromDouble(value);
  const ratio = grrRatio(value, range);
  return {
    name: "olh",
    ratio,
    epsilon: tightestEpsilon(ratio),
    fixedBytes: 2 * uniformBytes(HASH_PRIME) + randomizedResponseBytes(BigInt(range), keep),
    perturb(truth: Truth, source: ByteSource): ReportValue {
      const option = BigInt(asOption(truth, count));
      const a = uniformBelow(HASH_PRIME, source);
      const b = uniformBelow(HASH_PRIME, source);
      const hashed = universalHash(a, b, option, BigInt(range));
      const y = randomizedResponse(hashed, BigInt(range), keep, source);
      return { case: "hashed", value: create(HashedOptionSchema, { a, b, valueFixed: Number(y) }) };
    },
  };
}

registerMechanism({
  wireCase: "olh",
  // Not joint questions: as in Python, two cells' supports in one OLH report are correlated
  // through hash collisions, which the joint estimates cannot account for.
  questionKinds: ["categorical"],
  fromQuestion(question: Question): Mechanism {
    const kind = question.mechanism?.kind;
    const olh = kind?.case === "olh" ? kind.value : { g: 0, alpha: 0 };
    return optimizedLocalHashing(optionsOf(question), olh.g, olh.alpha);
  },
});
