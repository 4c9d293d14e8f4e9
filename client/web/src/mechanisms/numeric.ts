/** What the numeric mechanisms share: the range, exact positions, unbiased rounding, refusals. */

import { InvalidAnswerError, RefusedError } from "../core/errors";
import { Fraction } from "../core/fraction";
import { reprFloat, reprStr } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { tightestEpsilon } from "../privacy/epsilon";
import { bernoulliRational } from "../sampling/rational";
import type { ByteSource } from "../sampling/source";
import type { Mechanism, MechanismKind, ReportValue, Truth } from "./types";

/** Smallest ε a numeric mechanism accepts (Python's ``MIN_EPSILON``, 2^-20). */
export const MIN_EPSILON = 2 ** -20;
/** Largest ε a numeric mechanism accepts (Python's ``MAX_EPSILON``). */
export const MAX_EPSILON = 50;

/** An invalid parameter; the message starts with the parameter's name, as Python's errors. */
export class ParameterError extends Error {
  override name = "ParameterError";
}

/** ``epsilon`` in [2^-20, 50] (NaN refused), else a ParameterError naming it. */
export function checkEpsilon(epsilon: number): number {
  if (!(MIN_EPSILON <= epsilon && epsilon <= MAX_EPSILON)) {
    throw new ParameterError(
      `epsilon must be in [2^-20, 50] for a numeric mechanism, got ${reprFloat(epsilon)}`,
    );
  }
  return epsilon;
}

const epsilons = new Map<string, number>();

/** ``tightestEpsilon(ratio)``, once per ratio: a question's mechanism is rebuilt at every read. */
export function epsilonFor(ratio: Fraction): number {
  const key = ratio.toString();
  let epsilon = epsilons.get(key);
  if (epsilon === undefined) {
    epsilon = tightestEpsilon(ratio);
    if (epsilons.size > 256) epsilons.clear();
    epsilons.set(key, epsilon);
  }
  return epsilon;
}

/** An integer parameter in [low, high], else a ParameterError naming it (Python's ``check_int``). */
export function checkInt(name: string, value: bigint | number, low: bigint, high: bigint): bigint {
  const number = BigInt(value);
  if (number < low) throw new ParameterError(`${name} must be >= ${low}, got ${number}`);
  if (number > high) throw new ParameterError(`${name} must be <= ${high}, got ${number}`);
  return number;
}

/** The exact position u = (x − lo)/(hi − lo) in [0, 1] as n/den, as Python's ``exact_positions``. */
export interface Position {
  readonly n: bigint;
  readonly den: bigint;
}

/** u = (x·D − lo·D)/(hi·D − lo·D), D the largest power-of-two denominator of lo, hi and x. */
export function exactPosition(x: number, low: Fraction, high: Fraction): Position {
  const value = Fraction.fromDouble(x);
  let common = value.d;
  if (low.d > common) common = low.d;
  if (high.d > common) common = high.d;
  const base = low.n * (common / low.d);
  return { n: value.n * (common / value.d) - base, den: high.n * (common / high.d) - base };
}

/**
 * k in {0, ..., steps} with E[k] = steps·u, exactly (Python's ``stochastic_round``): floor
 * plus an exact rational Bernoulli of the fractional part, which reads its first word even
 * where steps·u is whole, so the bytes read do not depend on the true value.
 */
export function stochasticRound(position: Position, steps: bigint, source: ByteSource): bigint {
  const scaled = position.n * steps;
  const up = bernoulliRational(scaled % position.den, position.den, source, true);
  return scaled / position.den + (up ? 1n : 0n);
}

/** The range checks of Python's ``NumericMechanism``: finite, lo < hi, hi − lo finite. */
function checkRange(lo: number, hi: number): void {
  for (const [name, value] of [["lo", lo], ["hi", hi]] as const) {
    if (!Number.isFinite(value)) {
      throw new ParameterError(`${name} must be a finite number, got ${reprFloat(value)}`);
    }
  }
  const pair = `lo=${reprFloat(lo)}, hi=${reprFloat(hi)}`;
  if (!(lo < hi)) throw new ParameterError(`lo must be < hi, got ${pair}`);
  if (!Number.isFinite(hi - lo)) {
    throw new ParameterError(`hi - lo must be a finite float, got ${pair}`);
  }
}

/**
 * A mechanism for a number on the public range [lo, hi]: the normalized report y on the
 * dyadic grid, ``number`` on the wire, with the same reads whatever the true value.
 */
export abstract class NumericMechanism implements Mechanism {
  abstract readonly name: string;
  abstract readonly ratio: Fraction | null;
  abstract readonly epsilon: number;
  private readonly low: Fraction;
  private readonly high: Fraction;

  constructor(
    readonly lo: number,
    readonly hi: number,
  ) {
    checkRange(lo, hi);
    this.low = Fraction.fromDouble(lo);
    this.high = Fraction.fromDouble(hi);
  }

  /** The report y (normalized scale) for the exact position u = n/den, exactly. */
  abstract sample(position: Position, source: ByteSource): number;

  /** The bytes every report reads, whatever the truth (the rare events read more, after). */
  abstract get fixedBytes(): number;

  /** One report of a number in [lo, hi] (Python's ``perturb_many`` of one value, unclamped). */
  perturb(truth: Truth, source: ByteSource): ReportValue {
    if (typeof truth !== "number" || !Number.isFinite(truth)) {
      throw new InvalidAnswerError(`value must be a finite number, got ${String(truth)}`);
    }
    if (truth < this.lo || truth > this.hi) {
      throw new InvalidAnswerError(
        `value ${reprFloat(truth)} is outside [${reprFloat(this.lo)}, ${reprFloat(this.hi)}]`,
      );
    }
    const position = exactPosition(truth, this.low, this.high);
    return { case: "number", value: this.sample(position, source) };
  }
}


const EXPECTED: Record<string, string> = {
  binary: "randomized_response",
  categorical: "grr or oue or olh",
  joint: "grr or oue",
  multiSelect: "item_rr",
  numeric: "laplace or duchi or piecewise or hybrid",
};

/** The client's refusal of an invalid setting, worded as Python's ``check_mechanism``. */
export function refusal(question: Question, error: string): RefusedError {
  return new RefusedError(
    `question ${reprStr(question.id)}: ${error}; refusing to answer, nothing was sent. The ` +
      "survey's privacy setting is invalid: tell the survey's organizer",
  );
}

type NumericCase = "laplace" | "duchi" | "piecewise" | "hybrid";
type WireParameters<C extends NumericCase> = Extract<
  NonNullable<Question["mechanism"]>["kind"],
  { case: C }
>["value"];

/**
 * The registry entry of a numeric mechanism: refuses it on a question that is not numeric,
 * and words a parameter's error with the field's path (``mechanism.duchi.bound: ...``),
 * as Python's ``mechanism_of``; ``fields`` are the wire message's field names.
 */
export function numericKind<C extends NumericCase>(
  wireCase: C,
  fields: readonly string[],
  build: (lo: number, hi: number, parameters: WireParameters<C>) => NumericMechanism,
): MechanismKind {
  return {
    wireCase,
    questionKinds: ["numeric"],
    fromQuestion(question: Question): Mechanism {
      const kind = question.kind.case;
      if (kind === undefined) {
        throw refusal(question, "kind: missing (binary, categorical or numeric)");
      }
      if (kind !== "numeric") {
        const snake = kind.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        const expected = EXPECTED[kind] ?? "no mechanism";
        throw refusal(
          question,
          `mechanism: ${wireCase} does not apply to a ${snake} question (expected ${expected})`,
        );
      }
      const parameters = question.mechanism!.kind.value as WireParameters<C>;
      try {
        return build(question.kind.value.min, question.kind.value.max, parameters);
      } catch (error) {
        if (!(error instanceof ParameterError)) throw error;
        const named = error.message.split(" ", 1)[0]!;
        const where = `mechanism.${wireCase}${fields.includes(named) ? `.${named}` : ""}`;
        throw refusal(question, `${where}: ${error.message}`);
      }
    },
  };
}
