/** Numeric questions: a number on a public range, read exactly as Python's ``float`` reads it. */

import { InvalidAnswerError } from "../core/errors";
import { reprFloat, reprStr } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { refusal } from "../mechanisms/numeric";
import { registerQuestionType } from "./registry";
import type { QuestionType } from "./types";

/** Largest magnitude of a numeric question's ``min`` and ``max`` (Python's ``MAX_NUMERIC_BOUND``). */
export const MAX_NUMERIC_BOUND = 1e15;

// Python's str.isspace(): JavaScript's \s without U+FEFF, plus U+001C..U+001F and U+0085.
const SPACE =
  "[\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const TRIM = new RegExp(`^${SPACE}+|${SPACE}+$`, "gu");
const DIGITS = "[0-9](?:_?[0-9])*";
// Python's float() grammar: a sign, then infinity, nan or a decimal with optional "_" between digits.
const FLOAT = new RegExp(
  `^[+-]?(?:(?:inf|infinity|nan)|(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:e[+-]?${DIGITS})?)$`,
  "i",
);
const DECIMAL_DIGIT = /\p{Nd}/u;

/** Unicode decimal digits as ASCII, as Python's ``float`` reads them (each Nd run is 0..9). */
function asciiDigits(text: string): string {
  let out = "";
  for (const char of text) {
    let code = char.codePointAt(0)!;
    if (code > 0x7f && DECIMAL_DIGIT.test(char)) {
      let zero = code;
      while (DECIMAL_DIGIT.test(String.fromCodePoint(zero - 1))) zero -= 1;
      code = 0x30 + ((code - zero) % 10);
    }
    out += String.fromCodePoint(code);
  }
  return out;
}

/** Python's ``float(text)``, or NaN where it raises: the same texts, the same double. */
export function pythonFloat(text: string): number {
  const body = asciiDigits(text).replace(TRIM, "");
  if (!FLOAT.test(body)) return NaN;
  const lower = body.toLowerCase();
  const negative = lower.startsWith("-");
  const word = lower.replace(/^[+-]/, "");
  if (word === "nan") return NaN;
  if (word === "inf" || word === "infinity") return negative ? -Infinity : Infinity;
  return Number(lower.replaceAll("_", "")); // correctly rounded, like Python
}

/**
 * Numeric questions as Python's ``Numeric`` question type: answers are numbers in
 * [min, max], never clamped; the range's ends are at most 1e15 in magnitude.
 */
export class NumericQuestion implements QuestionType {
  readonly wireCase = "numeric" as const;

  /** A finite number in [min, max] (Python's ``parse_answer``); else InvalidAnswerError. */
  parseAnswer(text: string, question: Question): number {
    const { min, max } = range(question);
    const number = pythonFloat(text);
    if (!(min <= number && number <= max)) {
      throw new InvalidAnswerError(`answer must be ${this.answerHint(question)}, got ${reprStr(text)}`);
    }
    return number;
  }

  /** ``a number from MIN to MAX``, the ends as Python writes floats. */
  answerHint(question: Question): string {
    const { min, max } = range(question);
    return `a number from ${reprFloat(min)} to ${reprFloat(max)}`;
  }

  /** Refuse a range beyond ±1e15 (Python's ``check``), worded as the Python client. */
  check(question: Question): void {
    const { min, max } = range(question);
    for (const [field, value] of [["min", min], ["max", max]] as const) {
      if (Math.abs(value) > MAX_NUMERIC_BOUND) {
        throw refusal(
          question,
          `question.numeric.${field}: ${reprFloat(value)} is beyond ±1e+15, the largest ` +
            "magnitude of a numeric question's range",
        );
      }
    }
  }

  /** A numeric question has no options to choose from. */
  choices(): null {
    return null;
  }

  /** A numeric question is asked whole. */
  parts(): Question[] {
    return [];
  }
}

function range(question: Question): { min: number; max: number } {
  if (question.kind.case !== "numeric") throw new TypeError("not a numeric question");
  return question.kind.value;
}

/** The registered numeric question type. */
export const NUMERIC = registerQuestionType(new NumericQuestion());
