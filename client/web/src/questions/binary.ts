/** Yes/no questions: the answer is a bit, read as the CLI reads it. */

import { InvalidAnswerError } from "../core/errors";
import { pyStrip, reprStr } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { registerQuestionType } from "./registry";
import type { QuestionType } from "./types";

/** The words that answer yes and no, any case (Python's ``YES`` and ``NO``). */
export const YES = ["yes", "y"] as const;
export const NO = ["no", "n"] as const;

/** ``yes``/``y`` is true, ``no``/``n`` false, any case, surrounding whitespace ignored. */
export function parseYesNo(text: string): boolean {
  const value = pyStrip(text).toLowerCase();
  if ((YES as readonly string[]).includes(value)) return true;
  if ((NO as readonly string[]).includes(value)) return false;
  throw new InvalidAnswerError(`answer must be yes or no, got ${reprStr(text)}`);
}

/** A yes/no question (``Question.binary``); answers are true (yes) or false (no). */
export const BINARY: QuestionType = registerQuestionType({
  wireCase: "binary",
  parseAnswer: (text: string) => parseYesNo(text),
  answerHint: () => "yes or no",
  check: () => undefined,
  choices: (_question: Question) => [YES[0], NO[0], YES[1], NO[1]],
  parts: () => [],
});
