/** The Mechanism interface every participant mechanism implements, as in the Python client. */

import type { Fraction } from "../core/fraction";
import type { Mechanism as MechanismMessage, Question, Report } from "../gen/deniable/v1/aggregator_pb";
import type { ByteSource } from "../sampling/source";

/** A report's value oneof, as protobuf-es represents it (``{case: "bit", value: true}``...). */
export type ReportValue = Report["value"];

/**
 * A true answer as the mechanism takes it (Python's ``perturb_many`` inputs): a yes/no bit,
 * an option (or joint cell) index, an item mask for multi-select, a number on the range.
 */
export type Truth = boolean | number | bigint;

/** One question's mechanism, built from the question's parameters and validated. */
export interface Mechanism {
  /** The registry name, as Python's ``Mechanism.name`` ("randomized_response", "grr"...). */
  readonly name: string;
  /** The exact worst-case likelihood ratio e^ε; null when there is no privacy. */
  readonly ratio: Fraction | null;
  /** The smallest double ε with e^ε ≥ ratio (Python's ``tightest_epsilon``); Infinity if none. */
  readonly epsilon: number;
  /**
   * The bytes every report reads, whatever the truth and the outcome (only events of
   * probability at most 2^-64 read more, after them): ``buildReport`` takes them in one call.
   */
  readonly fixedBytes: number;
  /** One randomized report of one true answer; reads the same number of bytes for every truth. */
  perturb(truth: Truth, source: ByteSource): ReportValue;
}

/** How a mechanism is made from its wire message (its oneof case in ``Mechanism.kind``). */
export interface MechanismKind {
  /** The oneof case in ``deniable.v1.Mechanism`` ("randomizedResponse", "grr", "laplace"...). */
  readonly wireCase: NonNullable<MechanismMessage["kind"]["case"]>;
  /**
   * The ``Question.kind`` cases it answers (Python's ``question_type`` and ``also_answers``):
   * a question of another kind is refused before its parameters are read.
   */
  readonly questionKinds: readonly NonNullable<Question["kind"]["case"]>[];
  /**
   * Build and validate (``mechanismOf`` has checked the kinds); throws ``ParameterError``,
   * its message starting with the parameter's name, for parameters the Python client refuses.
   */
  fromQuestion(question: Question): Mechanism;
}
