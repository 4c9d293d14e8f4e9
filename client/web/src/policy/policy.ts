/** The participant's policy: maximum ε per answer and the budget, checked as the CLI's ``Policy``. */

import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { InvalidAnswerError, type Mechanism, type QuestionType, RefusedError, prepareQuestion } from "../index";
import { reprFloat, roundUp } from "../text/numbers";
import { reprStr } from "../core/pytext";

/** Largest ε one answer may cost by default: a yes/no guess right at most 88% of the time. */
export const DEFAULT_MAX_EPSILON = 2.0;
/** Total ε this browser may spend at this site by default. */
export const DEFAULT_BUDGET = 10.0;

/** Where a setting came from, for messages. */
export type Source = "default" | "set in this browser";

/** What this browser agrees to: ``maxEpsilon`` per answer, ``budget`` over every answer. */
export interface Policy {
  readonly maxEpsilon: number;
  readonly budget: number;
  readonly sources: { readonly maxEpsilon: Source; readonly budget: Source };
}

/** The policy with the CLI's defaults. */
export const DEFAULT_POLICY: Policy = {
  maxEpsilon: DEFAULT_MAX_EPSILON,
  budget: DEFAULT_BUDGET,
  sources: { maxEpsilon: "default", budget: "default" },
};

const SETTING_NAMES = { maxEpsilon: "max_epsilon", budget: "budget" } as const;

/** A finite ε > 0 from the participant's text, or an InvalidAnswerError naming the setting. */
export function parseSetting(name: keyof typeof SETTING_NAMES, text: string): number {
  const value = text.trim() === "" ? NaN : Number(text.trim());
  if (!(Number.isFinite(value) && value > 0)) {
    throw new InvalidAnswerError(
      `${SETTING_NAMES[name]} must be a finite number > 0, got ${JSON.stringify(text.trim())}`,
    );
  }
  return value;
}

/** A policy from stored numbers; a missing or invalid one keeps its default (fail safe). */
export function policyOf(stored: { maxEpsilon?: unknown; budget?: unknown } | undefined): Policy {
  const valid = (value: unknown): value is number =>
    typeof value === "number" && Number.isFinite(value) && value > 0;
  const max = valid(stored?.maxEpsilon) ? (stored!.maxEpsilon as number) : null;
  const budget = valid(stored?.budget) ? (stored!.budget as number) : null;
  return {
    maxEpsilon: max ?? DEFAULT_MAX_EPSILON,
    budget: budget ?? DEFAULT_BUDGET,
    sources: {
      maxEpsilon: max === null ? "default" : "set in this browser",
      budget: budget === null ? "default" : "set in this browser",
    },
  };
}

/** Where the page's participant changes a setting (the CLI names its options and config file). */
export function howToChange(name: keyof typeof SETTING_NAMES): string {
  const label = name === "maxEpsilon" ? "Maximum epsilon per answer" : "Privacy budget";
  return `"${label}" under Privacy settings on this page`;
}

/** A question's mechanism and type, ready to randomize an answer with. */
export interface Prepared {
  readonly question: Question;
  readonly mechanism: Mechanism;
  readonly type: QuestionType;
}

/**
 * The question's mechanism and type if this page accepts it: the library's
 * ``prepareQuestion`` (Python's ``check_mechanism``: known, valid, within the surveys' limits
 * and private; ε computed here from its parameters), with the question.
 */
export function prepare(question: Question): Prepared {
  return { question, ...prepareQuestion(question) };
}

/**
 * Whether the policy accepts a mechanism's ε (Python's ``spec.epsilon > max_epsilon``).
 * ε is the tightest double with e^ε at least the exact ratio, so comparing it with the limit
 * is exact: ε ≤ limit exactly when e^limit ≥ ratio.
 */
export function withinLimit(policy: Policy, mechanism: Mechanism): boolean {
  return mechanism.epsilon <= policy.maxEpsilon;
}

/** The question's mechanism if this policy accepts it (Python's ``Policy.check``). */
export function check(policy: Policy, question: Question): Prepared {
  const prepared = prepare(question);
  const { mechanism } = prepared;
  if (!withinLimit(policy, mechanism)) {
    throw new RefusedError(
      `question ${reprStr(question.id)}: epsilon ${roundUp(mechanism.epsilon)} (computed on this ` +
        `device from ${mechanism.name}) is above your limit of ${reprFloat(policy.maxEpsilon)} per ` +
        `answer (${policy.sources.maxEpsilon}); refusing to answer, nothing was sent. To accept ` +
        `this privacy loss, raise the limit with ${howToChange("maxEpsilon")}`,
    );
  }
  return prepared;
}
