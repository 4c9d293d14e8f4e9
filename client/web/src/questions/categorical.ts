/** Multiple-choice questions: one of 2..1024 named options, by name or number. */

import { InvalidAnswerError, InvalidQuestionError } from "../core/errors";
import { pyDigits, pyLen, pyStrip, reprStr, shown } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { MAX_OPTIONS } from "../mechanisms/parameters";
import { registerQuestionType } from "./registry";
import type { QuestionType } from "./types";

/** Longest option (or item) label, in characters. */
export const MAX_OPTION_TEXT = 200;

function optionsOf(question: Question): string[] {
  return question.kind.case === "categorical" ? question.kind.value.options : [];
}

/**
 * Refuse options outside the surveys' limits (Python's ``Categorical.check``): 2..1024
 * distinct options of 1..200 characters, not blank. ``where`` prefixes the field's path.
 */
export function checkOptions(options: readonly string[], where: string): void {
  const field = `${where}.categorical.options`;
  if (options.length < 2 || options.length > MAX_OPTIONS) {
    throw new InvalidQuestionError(`${field}: need 2..${MAX_OPTIONS} options, got ${options.length}`);
  }
  const seen = new Set<string>();
  options.forEach((option, index) => {
    if (!pyStrip(option) || pyLen(option) > MAX_OPTION_TEXT) {
      throw new InvalidQuestionError(`${field}[${index}]: must be 1..${MAX_OPTION_TEXT} characters`);
    }
    if (seen.has(option)) {
      throw new InvalidQuestionError(`${field}[${index}]: duplicate option ${shown(option)}`);
    }
    seen.add(option);
  });
}

/** ``an option name or its number 1..k``. */
function hint(question: Question): string {
  return `an option name or its number 1..${optionsOf(question).length}`;
}

/** An option's name (any case: the first that matches) or its number from 1: its index. */
export function parseOption(text: string, question: Question): number {
  const value = pyStrip(text);
  const lowered = optionsOf(question).map((option) => option.toLowerCase());
  const named = lowered.indexOf(value.toLowerCase());
  if (named >= 0) return named;
  const number = pyDigits(value);
  if (number !== null && number >= 1n && number <= BigInt(lowered.length)) return Number(number) - 1;
  throw new InvalidAnswerError(`answer must be ${hint(question)}, got ${reprStr(text)}`);
}

/** A multiple-choice question (``Question.categorical``); answers are option indices. */
export const CATEGORICAL: QuestionType = registerQuestionType({
  wireCase: "categorical",
  parseAnswer: parseOption,
  answerHint: hint,
  check: (question: Question) => checkOptions(optionsOf(question), "question"),
  choices: () => null,
  parts: () => [],
});
