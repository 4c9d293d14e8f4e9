/** Checks shared by the discrete mechanisms' constructors, as Python's ``_parameters.py``. */

import { ParameterError } from "../core/errors";
import { Fraction, ONE } from "../core/fraction";
import { reprFloat } from "../core/pytext";
import type { JointPart, Question } from "../gen/deniable/v1/aggregator_pb";

/** Most options a multiple-choice question (or a joint question's cells) may have. */
export const MAX_OPTIONS = 1024;

/** Most items a multi-select question may have. */
export const MAX_ITEMS = 64;

/** ``k`` if it is a number of options in [2, 1024] (Python's ``check_options``). */
export function checkOptions(k: number | bigint): number {
  if (!(k >= 2 && k <= MAX_OPTIONS)) {
    throw new ParameterError(`k must be between 2 and ${MAX_OPTIONS} options, got ${k}`);
  }
  return Number(k);
}

/** ``k`` if it is a number of items in [2, 64] (Python's ``check_items``). */
export function checkItems(k: number): number {
  if (!(k >= 2 && k <= MAX_ITEMS)) {
    throw new ParameterError(`k must be between 2 and ${MAX_ITEMS} items, got ${k}`);
  }
  return k;
}

function checkFinite(name: string, value: number): number {
  if (!Number.isFinite(value)) {
    throw new ParameterError(`${name} must be a finite number, got ${reprFloat(value)}`);
  }
  return value;
}

/** A keep-probability α in (0, 1] (Python's ``check_alpha``). */
export function checkAlpha(alpha: number): number {
  const value = checkFinite("alpha", alpha);
  if (!(value > 0 && value <= 1)) {
    const hint = value === 0 ? " (alpha = 0 reports pure noise: nothing can be estimated)" : "";
    throw new ParameterError(`alpha must be in (0, 1], got ${reprFloat(value)}${hint}`);
  }
  return value;
}

/** A bit's probability q strictly between 0 and 1/2 (OUE's q, per-item RR's flip). */
export function checkHalfOpen(q: number): number {
  const value = checkFinite("q", q);
  if (!(value > 0 && value < 0.5)) {
    throw new ParameterError(`q must be strictly between 0 and 1/2, got ${reprFloat(value)}`);
  }
  return value;
}

/** p* : q* = 1 + size·α/(1−α) exactly, for randomized response over ``size`` values; null at α = 1. */
export function grrRatio(alpha: number, size: number): Fraction | null {
  if (alpha >= 1) return null;
  const a = Fraction.fromDouble(alpha);
  return ONE.add(Fraction.of(size).mul(a).div(ONE.sub(a)));
}

/** (1−q)/q exactly: one bit's worst-case likelihood ratio. */
export function flipRatio(q: number): Fraction {
  const exact = Fraction.fromDouble(q);
  return ONE.sub(exact).div(exact);
}

/** How many values a joint question's part has: 2, its options, its bins (0 without a kind). */
export function partSize(part: JointPart): number {
  switch (part.kind.case) {
    case "binary":
      return 2;
    case "categorical":
      return part.kind.value.options.length;
    case "numeric":
      return Math.max(part.kind.value.edges.length - 1, 0);
    default:
      return 0;
  }
}

/**
 * The options of the question a frequency oracle answers (Python's ``options_of``): a
 * joint question's cells (the product of its parts' sizes), else the categorical options.
 */
export function optionsOf(question: Question): bigint {
  if (question.kind.case === "joint") {
    return question.kind.value.parts.reduce((cells, part) => cells * BigInt(partSize(part)), 1n);
  }
  return BigInt(question.kind.case === "categorical" ? question.kind.value.options.length : 0);
}

/** A true option as an integer in [0, k); throws RangeError otherwise (Python's ``as_option``). */
export function asOption(truth: boolean | number | bigint, k: number): number {
  const value = typeof truth === "bigint" ? Number(truth) : truth;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value >= k) {
    throw new RangeError(`value must be an option number in [0, ${k}), got ${String(truth)}`);
  }
  return value;
}
